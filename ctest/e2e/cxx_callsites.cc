// Call sites (issue 22) in C++: MPI_Send from a member function, a lambda and a template, each
// line with the totals over ranks check_callsites.py expects there.
// clang-format off: each MPI call stays on the one line its SITE comment names.
#include <mpi.h>

#include <cstdio>
#include <vector>

namespace {

struct Sender {
  std::vector<char> buf = std::vector<char>(64);
  void Send(int n) {
    MPI_Send(buf.data(), n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);  // SITE MPI_Send calls=2 sent=12
    ++sent;
  }
  int sent = 0;
};

template <typename T>
int SendTyped(const T* v, int n) {
  int rc = MPI_Send(v, n * int(sizeof(T)), MPI_BYTE, 1, 0, MPI_COMM_WORLD);  // SITE MPI_Send calls=1 sent=24
  return rc + n;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char in[64];
  if (rank == 0) {
    Sender s;
    s.Send(4);
    s.Send(8);
    auto lambda = [&](int n) {
      int rc = MPI_Send(s.buf.data(), n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);  // SITE MPI_Send calls=1 sent=5
      return rc + n;
    };
    volatile int r = lambda(5);
    (void)r;
    double d[3] = {1, 2, 3};
    volatile int q = SendTyped(d, 3);
    (void)q;
  } else if (rank == 1) {
    for (int i = 0; i < 4; ++i)
      MPI_Recv(in, 64, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);  // SITE MPI_Recv calls=4 recv=41
  }
  MPI_Finalize();
  if (rank == 0) std::printf("cxx_callsites: ok\n");
  return 0;
}
