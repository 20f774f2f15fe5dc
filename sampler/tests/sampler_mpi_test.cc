// MPI test: 2 ranks each run the sampler between MPI_Init and MPI_Finalize, as the runtime does
// (node leader = local rank 0 from MPI_Comm_split_type). Rank 0 busy-loops, rank 1 writes a
// known file; after Stop each rank checks its own raw files, and rank 0 reports.
//
//   mpirun -np 2 sampler_mpi_test DIR
#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/sample_format.h"
#include "sampler/sampler.h"

namespace {

// A minimal reader (the full one is otf2_writer/raw_samples.h; this test links no OTF2).
struct Series {
  std::vector<std::string> names;
  std::vector<bool> accumulated;
  std::vector<std::vector<double>> rows;
};

bool Load(const std::string& dir, int rank, Series* s, std::string* err) {
  FILE* f = std::fopen((dir + "/raw/" + invmw::samples::MetricsFileName(rank)).c_str(), "r");
  if (!f) return *err = "no metrics file", false;
  char line[4096];
  while (std::fgets(line, sizeof line, f)) {
    std::string l(line);
    if (l.find("\"type\":\"metric\"") == std::string::npos) continue;
    const size_t a = l.find("\"name\":\"") + 8;
    s->names.push_back(l.substr(a, l.find('"', a) - a));
    s->accumulated.push_back(l.find("\"mode\":\"accumulated\"") != std::string::npos);
  }
  std::fclose(f);
  f = std::fopen((dir + "/raw/" + invmw::samples::SamplesFileName(rank)).c_str(), "rb");
  if (!f) return *err = "no samples file", false;
  invmw::samples::SampleFileHeader h;
  if (std::fread(&h, sizeof h, 1, f) != 1 || h.num_metrics != s->names.size())
    return std::fclose(f), *err = "bad samples header", false;
  std::vector<char> rec(h.record_size);
  while (std::fread(rec.data(), rec.size(), 1, f) == 1) {
    std::vector<double> v(h.num_metrics);
    std::memcpy(v.data(), rec.data() + sizeof(invmw::samples::SampleRecordHead), 8 * v.size());
    s->rows.push_back(v);
  }
  std::fclose(f);
  return true;
}

double Last(const Series& s, const std::string& name) {
  for (size_t k = 0; k < s.names.size(); ++k)
    if (s.names[k] == name) return s.rows.back()[k];
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank;
  MPI_Comm_rank(local, &local_rank);
  const std::string dir = argc > 1 ? argv[1] : "sampler-mpi-test-run";
  if (rank == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir + "/raw");
  }
  MPI_Barrier(MPI_COMM_WORLD);

  invmw::config::Config cfg = invmw::config::Load();
  cfg.SAMPLER_INTERVAL = 0.005;
  cfg.SAMPLER_STREAM.clear();
  invmw::sampler::StartOptions o;
  o.run_dir = dir;
  o.rank = rank;
  o.world_size = size;
  o.node_leader = local_rank == 0;
  o.config = &cfg;
  std::string err;
  int ok = invmw::sampler::Start(o, &err) ? 1 : 0;
  if (!ok) std::fprintf(stderr, "rank %d: Start failed: %s\n", rank, err.c_str());

  const size_t bytes = 4 << 20;
  const int64_t t0 = invmw::clock::MonotonicNs();
  volatile double sink = 0;
  // Rank 0 computes until it has had 1 s of CPU time (not 1 s of wall time: on a loaded machine
  // that gets much less CPU, and the check below compares the sampled CPU time with it).
  auto thread_cpu = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  };
  const double cpu0 = thread_cpu();
  if (rank == 0) {
    while (invmw::clock::MonotonicNs() - t0 < 1000000000 || thread_cpu() - cpu0 < 1.0)
      for (int i = 0; i < 1000; ++i) sink = sink + 1;
  } else {
    const std::string file = dir + "/written-" + std::to_string(rank) + ".dat";
    const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char> block(1 << 16, 'y');
    for (size_t done = 0; fd >= 0 && done < bytes; done += block.size())
      if (write(fd, block.data(), block.size()) != ssize_t(block.size())) break;
    if (fd >= 0) close(fd);
    while (invmw::clock::MonotonicNs() - t0 < 1000000000) usleep(2000);
  }
  const double wall = double(invmw::clock::MonotonicNs() - t0) * 1e-9;
  invmw::sampler::Stop();  // before MPI_Finalize, as the runtime does

  Series s;
  std::string why;
  if (ok && !Load(dir, rank, &s, &why)) {
    std::fprintf(stderr, "rank %d: %s\n", rank, why.c_str());
    ok = 0;
  }
  if (ok) {
    const double expected = wall / 0.005;
    const double n = double(s.rows.size());
    std::printf("rank %d: %zu samples over %.3f s at 5 ms (expected %.0f)\n", rank, s.rows.size(),
                wall, expected);
    if (n < 0.75 * expected || n > 1.25 * expected + 2)
      ok = 0, std::printf("rank %d: FAIL sample count\n", rank);
    for (size_t k = 0; k < s.names.size(); ++k)
      for (size_t i = 1; s.accumulated[k] && i < s.rows.size(); ++i)
        if (s.rows[i][k] < s.rows[i - 1][k]) {
          std::printf("rank %d: FAIL %s decreases at %zu\n", rank, s.names[k].c_str(), i);
          ok = 0;
          break;
        }
    if (rank == 0) {
      const double user = Last(s, "proc.cpu.user");
      std::printf("rank 0: user CPU %.3f s of %.3f s wall, 1 s of computation\n", user, wall);
      if (user < 0.8) ok = 0, std::printf("rank 0: FAIL user CPU below 80%% of the computation\n");
    } else {
      const double wchar = Last(s, "proc.io.wchar");
      std::printf("rank %d: wchar %.0f bytes (wrote %zu)\n", rank, wchar, bytes);
      if (wchar < double(bytes)) ok = 0, std::printf("rank %d: FAIL wchar\n", rank);
    }
    // Node-wide sources only on the node leader.
    bool has_node = false;
    for (const auto& nm : s.names) has_node = has_node || nm.rfind("node_cpu.", 0) == 0;
    if (has_node != (local_rank == 0))
      ok = 0, std::printf("rank %d: FAIL node-wide sources on a non-leader (or missing)\n", rank);
  }
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Comm_free(&local);
  MPI_Finalize();
  if (rank == 0) std::printf("%s\n", all ? "PASS" : "FAIL");
  return all ? 0 : 1;
}
