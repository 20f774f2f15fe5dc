/* A program without PVM: run with libinvmw-pvm.so preloaded, it must behave and print
 * exactly as without (the test compares outputs and checks that no PVM symbol is bound). */
#include <stdio.h>
int main(void) {
  double s = 0;
  for (int i = 1; i <= 1000; ++i) s += 1.0 / i;
  printf("harmonic(1000) = %.12f\n", s);
  return 0;
}
