// Turning per-rank raw dumps into the run's profile (profile.json for programs, profile.txt for
// people).
//
// One code path serves both ways a profile comes to exist: at MPI_Finalize rank 0 gathers
// every rank's dump over MPI and calls BuildProfile; after an abnormal end `invmw` reads the
// dumps each rank saved under raw/ and calls the same function with incomplete = true.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/raw_format.h"

namespace invmw::profile {

struct RunAggregate;

struct RankData {
  raw::RankHeader header{};
  std::vector<raw::FuncRecord> funcs;
  // The call the rank was inside when it ended abnormally (raw_format.h); open_call.magic == 0
  // when none (a normal end, a dump without the record).
  raw::OpenCallRecord open_call{};
};

// Run metadata recorded by rank 0 at MPI_Init (meta.json).
struct RunMeta {
  std::string invmw_version;
  std::string mpi_flavor;
  std::string mpi_library;
  std::string output_dir;
  std::string command;
  std::string start_time;  // ISO 8601, UTC
  int world_size = 0;
  std::vector<std::pair<std::string, std::string>> config;
  // Traced runs: clock offsets of every rank to rank 0 at init (and finalize, once reached) with
  // their uncertainty (pmpi_wrap/trace_runtime.h, TraceClockSync); null otherwise.
  nlohmann::json clock_sync;
};

nlohmann::json MetaToJson(const RunMeta& m);
bool MetaFromJson(const nlohmann::json& j, RunMeta* m, std::string* error);
// Writes dir/meta.json through a temporary file and rename: rank 0 rewrites it at MPI_Finalize,
// and a run killed meanwhile must still leave the version written at MPI_Init. replace = false
// (a run's first write): fails, changing nothing, when an entry named meta.json exists, and
// sets *existed (when given) to its path.
bool WriteMeta(const std::string& dir, const RunMeta& m, std::string* error, bool replace = true,
               std::string* existed = nullptr);

// Parses one dump (header + records). Errors name what is wrong: a dump whose header is not
// usable (world size, rank, tick rate or times out of range, more records than a dump can hold,
// bytes after the last record, a function listed twice) is rejected as a whole.
bool ParseDump(const void* data, size_t size, RankData* out, std::string* error);
// Reads path only if it is a regular file (no symlink, FIFO or device; never blocks) of at
// most kMaxDumpBytes, then ParseDump. Errors start with the path.
bool ReadDumpFile(const std::string& path, RankData* out, std::string* error);
constexpr uint32_t kMaxDumpFuncs = 1u << 16;
constexpr uint64_t kMaxDumpBytes =
    sizeof(raw::RankHeader) + uint64_t(kMaxDumpFuncs) * sizeof(raw::FuncRecord);
// True when name is exactly what RawDumpPath writes ("rank-000042.bin"; more digits only for
// ranks above 999999, never extra leading zeros), with the rank it names.
bool ParseDumpFileName(const std::string& name, int* rank);

// The profile document. ranks may be missing some world ranks (a rank that died without
// saving); they are listed under "missing_ranks". Entries that are not parsed dumps, repeat a
// rank already given, or disagree with the world size are left out, and per-function sums over
// ranks that would exceed 2^64-1 saturate; each such finding is a line of "raw_problems" (and
// "counters_saturated": true for the latter), so nothing is counted twice or wraps silently.
nlohmann::json BuildProfile(const std::vector<RankData>& ranks, const RunMeta& meta,
                            bool incomplete);
// One rank's entry of profile.json's "ranks" (what BuildProfile lists for it).
nlohmann::json RankJson(const RankData& r);
// The profile document from ranks already combined (profile_aggregate.h): BuildProfile's result
// when agg holds the same ranks. ranks: the per-rank entries to list (may be empty when they
// stay in files), missing: the world ranks without data, problems: lines for "raw_problems".
nlohmann::json ProfileFromAggregate(const RunAggregate& agg, const RunMeta& meta, bool incomplete,
                                    int world, nlohmann::json ranks, nlohmann::json missing,
                                    nlohmann::json problems);

// Empty, or what the run did not record (calls of threads beyond the thread slots, requests
// beyond the request table), for profile.txt and a warning at the end of the run.
std::string DroppedNote(const nlohmann::json& profile);

std::string RenderText(const nlohmann::json& profile);

// Adds the sampler's per-rank resource summaries (raw/resources-R.json, written by
// sampler::Stop, see common/sample_format.h) to the profile as "resources": {"ranks": [...],
// "totals": {...}}; RenderText then prints a "Resources per rank" section. Ranks without a
// summary (sampler off, rank died, node without the shared file system) are left out. Returns
// the number of ranks attached; an unreadable summary is listed under resources.problems.
int AttachResources(nlohmann::json* profile, const std::string& dir);
// Lists the worlds MPI_Comm_spawn started whose data lies in DIR/spawned-*/ (their own profile
// and trace) as profile["spawned"]; returns how many.
int AttachSpawned(nlohmann::json* profile, const std::string& dir);

// Writes profile.json and profile.txt into dir, each through a temporary file and rename so a
// reader never sees half a profile. replace = false (the runtime's write into its new run
// directory): an existing entry of either name is left alone, the write fails and *existed
// (when given) is set to the entry's path. SIGXFSZ is ignored meanwhile (as in WriteMeta): a
// file size limit is an error, never the end of the application.
bool WriteProfile(const std::string& dir, const nlohmann::json& profile, std::string* error,
                  bool replace = true, std::string* existed = nullptr);

// Builds the profile of dir from raw/rank-NNNNNN.bin and meta.json (after an abnormal end).
// Only names that ParseDumpFileName accepts are read; every other "rank-*" entry, every file
// that cannot be read or parsed, a dump whose header names another rank than its file name
// (both files are named when that rank has its own file) and a dump of another world size is
// left out and described in *problems (when given) and in the profile's "raw_problems".
// Never blocks on FIFOs and never throws. Returns false with an error when there is nothing to
// merge or the profile cannot be written.
bool MergeDirectory(const std::string& dir, std::string* error, int* ranks_found = nullptr,
                    std::vector<std::string>* problems = nullptr);

// The per-rank half of a profile merged over the tree at MPI_Finalize (docs/profile.md): each
// rank writes its own "ranks" entry (RankJson) to raw/profile-NNNNNN.json, through a temporary
// file and a link that never replaces an existing entry.
std::string RankFilePath(const std::string& dir, int rank);
bool WriteRankFile(const std::string& dir, int rank, const nlohmann::json& entry,
                   std::string* error);
// Reads the entries of ranks 0..ranks-1 (regular files only, each naming its own rank) into
// *out, in rank order. Errors name the file and what is wrong with it.
bool ReadRankFiles(const std::string& dir, int ranks, nlohmann::json* out, std::string* error);
// When dir/profile.json lists its ranks in files ("rank_files", a run of more ranks than
// INVMW_PROFILE_INLINE_RANKS), puts them into its "ranks" and rewrites profile.json and
// profile.txt; *assembled says whether it did. False with *error when the files cannot be read
// (profile.json then stays as it was).
bool AssembleRankFiles(const std::string& dir, bool* assembled, std::string* error);

std::string RawDumpPath(const std::string& dir, int rank);
// raw/live-NNNNNN.bin: a rank's live counter file (raw_format.h LiveHeader).
std::string LiveCountersPath(const std::string& dir, int rank);
// Reads a live counter file (a regular file only; never blocks) as the dump of a rank that
// saved none: its counters summed over thread slots, end "killed", incomplete. Errors start
// with the path.
bool ReadLiveFile(const std::string& path, RankData* out, std::string* error);

}  // namespace invmw::profile
