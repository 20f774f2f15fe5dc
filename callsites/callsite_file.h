// The per-rank call-site file the MPI preload writes (DIR/callsites/rank-NNNNNN.txt; format in
// docs/callsites.md), parsed for the offline resolution. The file is untrusted input (a run may
// have been cut off mid-line, or the file edited): every malformed line is an error naming the
// line number and field; a file without its closing "end" line (the rank never reached
// MPI_Finalize) parses, with complete = false.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace invmw::callsites {

constexpr int kMaxDepth = 8;

struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  uint64_t base = 0;     // where the object's offset-0 mapping (its ELF header) starts; 0: unknown
  std::string build_id;  // hex, "" when the object has none
  std::string path;
};

struct Snapshot {
  std::string reason;  // init, new-object, finalize
  std::vector<Mapping> maps;
};

struct Counters {
  uint64_t calls = 0, ticks = 0, max_ticks = 0, bytes_sent = 0, bytes_recv = 0;
};

struct SiteRow {
  std::string function;
  Counters c;
  std::vector<uint64_t> pcs;  // return addresses, innermost first
  // Format 2: the thread slot whose table held the row and the row's slot there (what the
  // thread's trace records name); -1 in files of format 1.
  int32_t thread = -1, slot = -1;
};

struct UnattributedRow {
  std::string function;
  Counters c;
};

struct RankFile {
  int rank = -1;
  int depth = 0;
  double ticks_per_second = 0;
  std::vector<Snapshot> snapshots;
  std::vector<SiteRow> sites;
  std::vector<UnattributedRow> unattributed;
  bool complete = false;  // the "end" line was read
  uint64_t unattributed_calls = 0;
};

// Parses the text of one file. Errors: "line N: ..." naming the field and what was expected.
bool ParseRankFile(const std::string& text, RankFile* out, std::string* error);
// Reads path (a regular file of at most 256 MiB, no symlink followed) and parses it; errors
// start with the path.
bool ReadRankFile(const std::string& path, RankFile* out, std::string* error);
// True for "rank-NNNNNN.txt" (as recording::CallSiteFilePath writes), with its rank.
bool ParseRankFileName(const std::string& name, int* rank);

// The live call-site file callsites/live-NNNNNN.bin (recording/callsite_live.h): the tables of
// a rank, as its threads left them. Read for a rank whose text file has no table (it never
// finished MPI_Finalize); its mappings come from that text file.
struct LiveTables {
  int rank = -1;
  int depth = 0;
  uint32_t slots = 0;          // thread slots read
  std::vector<SiteRow> sites;  // one row per used entry of each slot
  std::vector<UnattributedRow> unattributed;
  uint64_t unattributed_calls = 0;
  // Entries left out as damaged (function or depth out of range: no kill leaves these, since
  // an entry's function is stored last). Entries of the call a kill interrupted are whole or
  // still free; one with no call counted yet is skipped and not counted here.
  uint64_t damaged = 0;
};
// read(buf, n, at): the n bytes at offset `at` of a file of `size` bytes; false when missing.
using ReadAt = std::function<bool(void* buf, size_t n, uint64_t at)>;
// Errors name the header field and what was expected; nothing in the file is trusted.
bool ParseLiveTables(uint64_t size, const ReadAt& read, LiveTables* out, std::string* error);
// Reads path (a regular file, no symlink followed); errors start with the path.
bool ReadLiveTables(const std::string& path, LiveTables* out, std::string* error);
// True for "live-NNNNNN.bin" (as recording::LiveSitesPath names it), with its rank.
bool ParseLiveFileName(const std::string& name, int* rank);

}  // namespace invmw::callsites
