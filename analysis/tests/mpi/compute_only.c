/* Computation only: every rank computes 300 ms and never communicates. Known: computation-bound,
 * computation 0.3 s per rank, no idle or synchronization time. */
#include "busy.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Busy(0.3);
  MPI_Finalize();
  return 0;
}
