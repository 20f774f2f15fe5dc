/* MPI-IO (2 ranks): bytes written count as bytes_sent, bytes read as bytes_recv (count x type
 * size). Each rank writes and reads its own block of a shared file with MPI_File_write_at /
 * MPI_File_read_at, then collective MPI_File_write_at_all / MPI_File_read_at_all, and an
 * individual-pointer MPI_File_write / MPI_File_read after MPI_File_seek. Calls the MPI-IO
 * implementation makes internally must not be counted. */
#include <mpi.h>

#include "expect.h"

int main(int argc, char** argv) {
  int rank, size, i;
  double out[200], in[200];
  char path[4200];
  MPI_File fh;
  const char* dir = getenv("INVMW_TEST_EXPECT_DIR");

  MPI_Init(&argc, &argv);
  ex_call("MPI_Init", 0, 0);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  snprintf(path, sizeof path, "%s/c_io.dat", dir ? dir : ".");
  for (i = 0; i < 200; ++i) out[i] = rank * 1000 + i;

  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  ex_call("MPI_File_open", 0, 0);
  const MPI_Offset base = (MPI_Offset)rank * 200 * sizeof(double);
  MPI_File_write_at(fh, base, out, 50, MPI_DOUBLE, MPI_STATUS_IGNORE);
  ex_call("MPI_File_write_at", 50 * 8, 0);
  MPI_File_read_at(fh, base, in, 30, MPI_DOUBLE, MPI_STATUS_IGNORE);
  ex_call("MPI_File_read_at", 0, 30 * 8);
  EX_CHECK(in[29] == out[29]);
  MPI_File_write_at_all(fh, base + 50 * 8, out + 50, 70, MPI_DOUBLE, MPI_STATUS_IGNORE);
  ex_call("MPI_File_write_at_all", 70 * 8, 0);
  MPI_File_read_at_all(fh, base + 50 * 8, in, 70, MPI_DOUBLE, MPI_STATUS_IGNORE);
  ex_call("MPI_File_read_at_all", 0, 70 * 8);
  EX_CHECK(in[69] == out[119]);
  MPI_File_seek(fh, base + 120 * 8, MPI_SEEK_SET);
  ex_call("MPI_File_seek", 0, 0);
  MPI_File_write(fh, out + 120, 10, MPI_DOUBLE, MPI_STATUS_IGNORE);
  ex_call("MPI_File_write", 10 * 8, 0);
  MPI_File_seek(fh, base + 120 * 8, MPI_SEEK_SET);
  ex_call("MPI_File_seek", 0, 0);
  MPI_File_read(fh, in, 10, MPI_DOUBLE, MPI_STATUS_IGNORE);
  ex_call("MPI_File_read", 0, 10 * 8);
  EX_CHECK(in[9] == out[129]);
  MPI_File_close(&fh);
  ex_call("MPI_File_close", 0, 0);

  ex_call("MPI_Finalize", 0, 0);
  ex_write(rank);
  if (rank == 0) printf("c_io: ok %g\n", in[9]);
  MPI_Finalize();
  return 0;
}
