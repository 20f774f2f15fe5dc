// Write time per row of the results database: what the runner adds to every design point
// for its bookkeeping. Each row is written as the runner writes it (one IMMEDIATE transaction
// with the run_order lookup and the upsert, WAL, synchronous=NORMAL) into a fresh database.
//
// usage: bench_results_db [DIR] [ROWS]   (default: the current directory, 1000 rows)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "results/results_db.h"

int main(int argc, char** argv) {
  using namespace invmw::results;
  std::string dir = argc > 1 ? argv[1] : ".";
  int rows = argc > 2 ? std::atoi(argv[2]) : 1000;
  std::string path = dir + "/bench-results-" + std::to_string(getpid()) + ".db";
  std::vector<double> us;
  {
    ResultsDb db(path);
    for (int i = 0; i < rows; ++i) {
      RunRecord r;
      r.design = "bench";
      r.point = i;
      r.platform = "local";
      r.factors = R"({"n":200,"u":1,"rc":10,"p":4})";
      r.responses =
          R"({"t_wall":1.2345,"t_par_comp":0.9,"t_seq_comp":0.1,"t_comm":0.1,"t_sync":0.05,"t_idle":0.03})";
      r.host = "bench";
      r.start_time = IsoTimeNow();
      r.duration = 1.5;
      r.status = "ok";
      r.trace_dir = "/tmp/bench/p" + std::to_string(i);
      auto t0 = std::chrono::steady_clock::now();
      db.Write(r);
      us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  std::printf("results database write time per row (%d rows, %s):\n", rows, dir.c_str());
  std::printf("  mean %.1f us  median %.1f us  p99 %.1f us  max %.1f us\n", sum / rows,
              us[us.size() / 2], us[us.size() * 99 / 100], us.back());
  return 0;
}
