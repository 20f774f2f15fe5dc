// Test-only: writes a synthetic raw run (raw/defs-R.jsonl, raw/events-R-T.bin) in the exact
// format of common/event_format.h, together with what a correct conversion must contain.
//
// Why: the converter must be tested without MPI and with situations a real run produces only
// by accident (clock offsets and drift between ranks, a crash that cuts a record, a send
// nobody receives). The generator places every event on one true timeline, then maps each
// rank's events to its own skewed clock, so tests can check that correction restores causality.
//
// The scenario per iteration (3 ranks; rank 0 has 2 threads): blocking send 0->1 received with
// MPI_ANY_SOURCE; Isend 1->2 / Irecv(ANY_SOURCE) with Wait; a send from rank 0's second thread
// 0->2 with a buffer flush inside; an Allreduce on the communicator {0,2} from MPI_Comm_split
// (rank 1 alone in its own); a Bcast rooted at 1; an Ibarrier with Wait; an Isend 0->2 whose
// Irecv is polled by failed Tests; a cancelled receive on rank 1; a pause (Pcontrol) on rank 1;
// a persistent send 0->1 (Send_init, Start, Wait); a Sendrecv exchange between 1 and 2 and a
// world Barrier. Split happens in iteration 0, Comm_free at
// the end; Init and Finalize frame everything.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace invmw::otf2::testing {

struct SyntheticOptions {
  int iterations = 1;
  double ticks_per_second = 1e9;
  uint64_t base_ticks = 1000000000000ull;  // rank 0's clock at the true time 0
  // Rank r's clock minus rank 0's at true time 0, and its rate error (ticks per tick).
  std::vector<int64_t> offsets = {0, -2000000, 3000000};
  std::vector<double> drift = {0, 2e-4, -3e-4};
  bool finalize_clock = true;   // write the "finalize" clock lines (drift measurable)
  bool crash = false;           // rank 2: last record cut short, no "end" line
  bool unmatched_send = false;  // one extra send 0->1 that nobody receives
  uint64_t step_ticks = 20000;  // spacing of the scenario's steps (true ticks)
  // Sampler files (raw/metrics-R.jsonl, raw/samples-R.bin) for every rank: "proc.cpu.user"
  // (s, accumulated) and "proc.rss" (bytes, absolute), this many samples evenly over the run.
  int samples = 0;
};

struct ExpectedSample {
  int32_t rank;
  uint64_t true_ticks;  // rank-0 ticks since base_ticks
  double cpu_user, rss;
};

struct ExpectedMessage {
  int32_t src, dst;
  uint32_t tag;
  uint64_t bytes;
  uint64_t send_true, recv_true;  // true times of send begin and receive end (rank-0 ticks)
};

struct Expected {
  std::map<std::string, uint64_t> by_type;                     // OTF2 event type -> count
  std::map<int32_t, std::map<std::string, uint64_t>> by_rank;  // rank -> type -> count
  std::vector<ExpectedMessage> messages;
  uint64_t records = 0;  // raw records written (whole ones)
  uint64_t slices = 0;   // Enter/Leave pairs
  uint64_t unmatched_sends = 0;
  std::vector<ExpectedSample> samples;
  int32_t ranks = 3;
};

Expected WriteSyntheticRun(const std::string& dir, const SyntheticOptions& options = {});

}  // namespace invmw::otf2::testing
