// A run directory's raw trace (raw/defs-R.jsonl + raw/events-R-T.bin) loaded into memory.
//
// Why a separate loader: the converter, `trace recover` and the tests all start from what the
// preload runtime left on disk, and that may be a crashed run: files missing, a last record
// cut short, a defs file without its "end" line. The loader accepts everything that can be
// used, drops what cannot, and says what it dropped (file and reason) in `problems`, so a
// partial trace is still converted and the user still learns that it is partial.
//
// Contract: LoadRawRun never throws for damaged input; it throws std::runtime_error only when
// the directory holds no usable rank at all (no raw/ folder, or no readable defs file).
// Records of each thread stay in file order (the order the thread produced them).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/event_format.h"

namespace invmw::otf2 {

struct ClockSample {
  uint64_t ticks = 0;        // this rank's tick at which the offset was measured
  int64_t offset_ticks = 0;  // this rank's clock minus rank 0's at `ticks`
  int64_t uncertainty_ticks = 0;
};

struct RawComm {
  uint32_t id = 0;               // this rank's local id (the `comm` field of records)
  std::vector<int32_t> members;  // world ranks, in communicator rank order
  std::vector<int32_t> remote_members;
  bool inter = false;
  int64_t seq = 0;  // creation order among this rank's communicators
};

struct RawThread {
  int32_t index = 0;
  std::string name;  // "main" or "thread T"
  std::vector<trace::EventRecord> records;
  // Per record: its call-site slot + 1 in the thread's call-site table (0 none), taken out of
  // kCall records' request field (event_format.h kFlagCallSite); empty when no record has one.
  std::vector<uint32_t> site_slots;
};

struct RawRank {
  int32_t rank = -1;
  int32_t world_size = 0;
  std::string host;
  int64_t pid = 0;
  std::string flavor;
  double ticks_per_second = 0;
  uint64_t init_ticks = 0;
  int64_t init_realtime_ns = 0;
  std::vector<std::string> func_names, func_kinds, func_classes;  // index = EventRecord::func
  // Per-call counters (defs "counters" line): what kCounters records hold.
  std::vector<std::string> counter_names, counter_units;
  std::map<uint32_t, RawComm> comms;  // by local id
  bool has_init_clock = false, has_finalize_clock = false;
  ClockSample init_clock, finalize_clock;
  bool has_end = false;
  std::string end_reason;  // empty without an "end" line: the rank did not stop cleanly
  uint64_t end_ticks = 0;
  uint64_t dropped_events = 0;
  uint64_t dropped_calls = 0;     // calls the runtime could not record (thread slots)
  uint64_t dropped_requests = 0;  // requests whose completion it could not record
  uint64_t flushes = 0;
  // Some of the rank's raw data could not be used (an unreadable defs line, a cut record, a
  // missing events file): the archive built from it is partial.
  bool damaged = false;
  std::vector<RawThread> threads;  // sorted by index
};

struct RawRun {
  std::string dir;             // the run directory
  std::vector<RawRank> ranks;  // sorted by rank; ranks whose defs could not be read are absent
  int32_t world_size = 0;
  std::vector<std::string> problems;  // "raw/events-000001-000.bin: ..." one per finding
  uint64_t NumRecords() const;
};

struct LoadOptions {
  // Load the event files too; false reads only the defs (cheap summaries, rank-by-rank
  // conversion that loads events later with LoadRankEvents).
  bool events = true;
};

// Files are read only under their exact names (DefsFileName, EventsFileName; other "defs-*" and
// "events-*" names are reported and ignored), only when they are regular files (no symlink,
// FIFO or device; nothing blocks) and, for event files, no larger than the machine's memory.
// A defs line with a rank, world size (1..2^24) or tick rate (finite, >= 1/s) out of range is
// unusable; a defs file whose world size differs from the one most ranks give is skipped.
RawRun LoadRawRun(const std::string& run_dir, const LoadOptions& options = {});

// The defs text of one rank (the content of raw/defs-R.jsonl, `name` as it appears in
// problems): what LoadRawRun does with each defs file, callable on a buffer. Returns false when
// the rank is unusable (no valid "rank" or "functions" line).
bool ParseDefs(std::string_view text, const std::string& name, RawRank* rank,
               std::vector<std::string>* problems);

// The defs file of one rank (raw/defs-R.jsonl), read and checked as LoadRawRun does; false
// when it is missing or unusable, or holds another rank.
bool LoadRankDefs(const std::string& run_dir, int32_t rank, RawRank* out,
                  std::vector<std::string>* problems);

// Loads (or reloads) the event files of one rank into rank->threads; problems are appended.
void LoadRankEvents(const std::string& run_dir, RawRank* rank, std::vector<std::string>* problems);

// File names, shared with the synthetic-run generator of the tests.
std::string DefsFileName(int32_t rank);
std::string EventsFileName(int32_t rank, int32_t thread);

}  // namespace invmw::otf2
