#include "recording/profile_report.h"
#include "recording/profile_aggregate.h"
#include "recording/callsite_report.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/ignore_sigxfsz.h"
#include "common/raw_input.h"

#include "common/run_dir.h"

namespace invmw::profile {

using nlohmann::json;

json MetaToJson(const RunMeta& m) {
  json cfg = json::object();
  for (const auto& [k, v] : m.config) cfg[k] = v;
  json j{{"invmw_version", m.invmw_version},
         {"mpi_flavor", m.mpi_flavor},
         {"mpi_library", m.mpi_library},
         {"output_dir", m.output_dir},
         {"command", m.command},
         {"start_time", m.start_time},
         {"world_size", m.world_size},
         {"config", cfg}};
  if (!m.clock_sync.is_null()) j["clock_sync"] = m.clock_sync;
  return j;
}

bool MetaFromJson(const json& j, RunMeta* m, std::string* error) {
  try {
    m->invmw_version = j.value("invmw_version", "");
    m->mpi_flavor = j.value("mpi_flavor", "");
    m->mpi_library = j.value("mpi_library", "");
    m->output_dir = j.value("output_dir", "");
    m->command = j.value("command", "");
    m->start_time = j.value("start_time", "");
    m->world_size = j.value("world_size", 0);
    m->config.clear();
    if (j.contains("config"))
      for (auto it = j["config"].begin(); it != j["config"].end(); ++it)
        m->config.emplace_back(it.key(), it.value().get<std::string>());
    m->clock_sync = j.value("clock_sync", json());
  } catch (const std::exception& e) {
    *error = std::string("meta.json: ") + e.what();
    return false;
  }
  return true;
}

std::string RawDumpPath(const std::string& dir, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "/raw/rank-%06d.bin", rank);
  return dir + name;
}

std::string LiveCountersPath(const std::string& dir, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "/raw/live-%06d.bin", rank);
  return dir + name;
}

namespace {

// The live file's counters summed over its slots, as the dump the rank would have written.
bool ParseLiveFile(int fd, const struct stat& st, RankData* out, std::string* error) {
  raw::LiveHeader h;
  if (uint64_t(st.st_size) < sizeof h || !rawio::ReadAt(fd, &h, sizeof h, 0)) {
    *error = "live counter file of " + std::to_string(st.st_size) +
             " bytes is shorter than its header (" + std::to_string(sizeof h) + ")";
    return false;
  }
  if (h.magic != raw::kLiveMagic) {
    // The runtime writes the magic last, at the end of MPI_Init.
    *error = "not an invmw live counter file, or its rank died inside MPI_Init (magic " +
             std::to_string(h.magic) + ")";
    return false;
  }
  if (h.version != raw::kLiveVersion || h.header_size != sizeof h ||
      h.counters_size != sizeof(raw::FuncCounters)) {
    *error = "live counter file version " + std::to_string(h.version) +
             " does not match this invmw (" + std::to_string(raw::kLiveVersion) + ")";
    return false;
  }
  const uint64_t size = uint64_t(st.st_size);
  if (h.num_funcs > kMaxDumpFuncs || h.slots_used > h.slot_count ||
      h.slot_size != uint64_t(h.num_funcs) * sizeof(raw::FuncCounters) ||
      h.names_offset < sizeof h || h.names_offset + uint64_t(h.num_funcs) * 48 > h.slots_offset ||
      h.slots_offset > size ||
      (size - h.slots_offset) / (h.slot_size ? h.slot_size : 1) < uint64_t(h.slots_used)) {
    *error = "live counter file layout out of range (num_funcs " + std::to_string(h.num_funcs) +
             ", slots " + std::to_string(h.slots_used) + " of " + std::to_string(h.slot_count) +
             ", slot_size " + std::to_string(h.slot_size) + ", offsets " +
             std::to_string(h.names_offset) + "/" + std::to_string(h.slots_offset) + ", file " +
             std::to_string(size) + " bytes)";
    return false;
  }
  std::vector<char> names(size_t(h.num_funcs) * 48);
  std::vector<raw::FuncCounters> sum(h.num_funcs), slot(h.num_funcs);
  if (!names.empty() && !rawio::ReadAt(fd, names.data(), names.size(), h.names_offset)) {
    *error = "cannot read the function names";
    return false;
  }
  for (uint32_t t = 0; t < h.slots_used; ++t) {
    if (h.num_funcs &&
        !rawio::ReadAt(fd, slot.data(), h.slot_size, h.slots_offset + t * h.slot_size)) {
      *error = "cannot read thread slot " + std::to_string(t);
      return false;
    }
    for (uint32_t f = 0; f < h.num_funcs; ++f) {
      raw::FuncCounters& a = sum[f];
      const raw::FuncCounters& b = slot[f];
      a.calls += b.calls;
      a.ticks += b.ticks;
      a.bytes_sent += b.bytes_sent;
      a.bytes_recv += b.bytes_recv;
      a.max_ticks = std::max(a.max_ticks, b.max_ticks);
      for (int k = 0; k < raw::kHistBins; ++k) {
        a.hist[k] += b.hist[k];
        a.hist_sent[k] += b.hist_sent[k];
        a.hist_recv[k] += b.hist_recv[k];
      }
    }
  }
  // Through ParseDump, so a live file meets every check a dump does.
  std::string dump(sizeof(raw::RankHeader), '\0');
  raw::RankHeader rh = h.rank;
  rh.num_funcs = 0;
  rh.num_threads = h.slots_used;
  rh.end_reason = raw::kEndKilled;
  rh.end_signal = 0;
  rh.flags |= raw::kFlagIncomplete;
  // The end is not known: the file's last modification (the kernel stamps it when counters
  // change after a writeback, so this may be early by up to the writeback interval).
  const int64_t mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  double after_init_s = double(mtime_ns - rh.init_realtime_ns) / 1e9;
  if (!std::isfinite(after_init_s) || after_init_s < 0) after_init_s = 0;
  if (std::isfinite(rh.ticks_per_second) && rh.ticks_per_second >= 1 && after_init_s < 1e9) {
    rh.end_ticks = rh.init_ticks + uint64_t(after_init_s * rh.ticks_per_second);
    rh.wall_s = rh.mpi_init_s + after_init_s;
  }
  for (uint32_t f = 0; f < h.num_funcs; ++f) {
    if (sum[f].calls == 0) continue;
    raw::FuncRecord r;
    std::memset(&r, 0, sizeof r);
    std::memcpy(r.name, names.data() + 48 * size_t(f), sizeof r.name);
    r.name[sizeof r.name - 1] = '\0';
    std::memcpy(reinterpret_cast<char*>(&r) + sizeof r.name, &sum[f], sizeof sum[f]);
    dump.append(reinterpret_cast<const char*>(&r), sizeof r);
    ++rh.num_funcs;
  }
  std::memcpy(&dump[0], &rh, sizeof rh);
  return ParseDump(dump.data(), dump.size(), out, error);
}

}  // namespace

bool ReadLiveFile(const std::string& path, RankData* out, std::string* error) {
  // Never blocks on a FIFO, never follows a link.
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  bool ok = false;
  if (fd < 0) {
    *error = std::string("cannot open: ") + std::strerror(errno);
  } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = "not a regular file";
  } else {
    ok = ParseLiveFile(fd, st, out, error);
  }
  if (fd >= 0) close(fd);
  if (!ok) *error = path + ": " + *error;
  return ok;
}

bool ParseDump(const void* data, size_t size, RankData* out, std::string* error) {
  if (size < sizeof(raw::RankHeader)) {
    *error = "dump of " + std::to_string(size) + " bytes is shorter than its header (" +
             std::to_string(sizeof(raw::RankHeader)) + ")";
    return false;
  }
  std::memcpy(&out->header, data, sizeof(raw::RankHeader));
  auto& h = out->header;
  if (h.magic != raw::kMagic) {
    *error = "not an invmw raw dump (bad magic)";
    return false;
  }
  if (h.version != raw::kVersion || h.header_size != sizeof(raw::RankHeader) ||
      h.record_size != sizeof(raw::FuncRecord)) {
    *error = "raw dump version " + std::to_string(h.version) + " does not match this invmw (" +
             std::to_string(raw::kVersion) + ")";
    return false;
  }
  // Checked before use: the merge allocates per world rank and divides by the tick rate.
  if (h.world_size < 1 || h.world_size > rawio::kMaxWorldSize) {
    *error = "world_size " + std::to_string(h.world_size) + " is outside 1.." +
             std::to_string(rawio::kMaxWorldSize);
    return false;
  }
  if (h.rank < 0 || h.rank >= h.world_size) {
    *error = "rank " + std::to_string(h.rank) + " is outside 0.." +
             std::to_string(h.world_size - 1) + " (world_size " + std::to_string(h.world_size) +
             ")";
    return false;
  }
  if (!std::isfinite(h.ticks_per_second) || h.ticks_per_second < 1) {
    *error = "ticks_per_second is " + std::to_string(h.ticks_per_second) +
             ": expected a finite tick rate of at least 1 per second (times cannot be computed)";
    return false;
  }
  if (!std::isfinite(h.wall_s) || h.wall_s < 0 || !std::isfinite(h.mpi_init_s) ||
      h.mpi_init_s < 0) {
    *error = "wall_s " + std::to_string(h.wall_s) + " / mpi_init_s " +
             std::to_string(h.mpi_init_s) + ": expected finite, non-negative seconds";
    return false;
  }
  if (h.num_funcs > kMaxDumpFuncs) {
    *error = "num_funcs " + std::to_string(h.num_funcs) + " is more than the " +
             std::to_string(kMaxDumpFuncs) + " a dump can hold";
    return false;
  }
  size_t need = sizeof(raw::RankHeader) + size_t(h.num_funcs) * sizeof(raw::FuncRecord);
  if (size < need) {
    *error = "dump truncated: " + std::to_string(size) + " of " + std::to_string(need) + " bytes";
    return false;
  }
  out->open_call = raw::OpenCallRecord{};
  if (size == need + sizeof(raw::OpenCallRecord)) {
    raw::OpenCallRecord o;
    std::memcpy(&o, static_cast<const char*>(data) + need, sizeof o);
    if (o.magic != raw::kOpenCallMagic || o.record_size != sizeof o) {
      *error = "the record after the last function record is not an open-call record (magic " +
               std::to_string(o.magic) + ", size " + std::to_string(o.record_size) + ")";
      return false;
    }
    if (o.enter_ticks > h.end_ticks) {
      *error = "open call " + std::string(o.name, strnlen(o.name, sizeof o.name)) +
               " entered after the rank's end (enter_ticks " + std::to_string(o.enter_ticks) +
               " > end_ticks " + std::to_string(h.end_ticks) + ")";
      return false;
    }
    o.name[sizeof o.name - 1] = '\0';
    out->open_call = o;
    need += sizeof o;
  }
  if (size > need) {
    *error = std::to_string(size - need) + " bytes after the last of its " +
             std::to_string(h.num_funcs) + " records (" + std::to_string(need) +
             " expected): not a dump as the runtime writes it";
    return false;
  }
  h.host[sizeof h.host - 1] = '\0';
  h.mpi_library[sizeof h.mpi_library - 1] = '\0';
  h.invmw_version[sizeof h.invmw_version - 1] = '\0';
  h.mpi_flavor[sizeof h.mpi_flavor - 1] = '\0';
  out->funcs.resize(h.num_funcs);
  if (h.num_funcs)  // data() of an empty vector may be null, which memcpy must not get
    std::memcpy(out->funcs.data(), static_cast<const char*>(data) + sizeof(raw::RankHeader),
                size_t(h.num_funcs) * sizeof(raw::FuncRecord));
  // A damaged dump's text fields may lack their terminator; the profile reads them as C strings.
  auto& hw = out->header;
  hw.host[sizeof hw.host - 1] = hw.mpi_library[sizeof hw.mpi_library - 1] = '\0';
  hw.invmw_version[sizeof hw.invmw_version - 1] = hw.mpi_flavor[sizeof hw.mpi_flavor - 1] = '\0';
  std::set<std::string> names;
  for (auto& f : out->funcs) {
    f.name[sizeof f.name - 1] = '\0';
    if (!names.insert(f.name).second) {
      *error = std::string("function ") + f.name + " is listed twice";
      return false;
    }
  }
  return true;
}

bool ReadDumpFile(const std::string& path, RankData* out, std::string* error) {
  std::string data;
  if (!rawio::ReadRegularFile(path, kMaxDumpBytes, &data, error) ||
      !ParseDump(data.data(), data.size(), out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

bool ParseDumpFileName(const std::string& name, int* rank) {
  int32_t r = 0;
  if (name.size() < 5 + 6 + 4 || name.compare(0, 5, "rank-") != 0 ||
      name.compare(name.size() - 4, 4, ".bin") != 0 ||
      !rawio::ParseNameNumber(std::string_view(name).substr(5, name.size() - 9), 6, &r))
    return false;
  *rank = r;
  return true;
}

namespace {

// profile.json's ranks[].in_call: the call an abnormal end cut off, null when none.
json InCallJson(const RankData& rd, const raw::RankHeader& h) {
  const raw::OpenCallRecord& o = rd.open_call;
  if (o.magic != raw::kOpenCallMagic) return nullptr;
  const bool ok =
      std::isfinite(h.ticks_per_second) && h.ticks_per_second > 0 && h.end_ticks >= o.enter_ticks;
  json j = {{"function", std::string(o.name, strnlen(o.name, sizeof o.name))},
            {"seconds",
             ok ? json(double(h.end_ticks - o.enter_ticks) / h.ticks_per_second) : json(nullptr)},
            {"thread", o.thread}};
  if (o.flags & raw::kOpenPeerKnown) {
    j["peer"] = o.peer >= 0 ? json(o.peer) : json(nullptr);
    j["tag"] = o.tag;
    j["peer_is"] = (o.flags & raw::kOpenToPeer) ? "destination" : "source";
  }
  if (o.flags & raw::kOpenCommKnown) j["communicator"] = o.comm;
  return j;
}

// "rank 1 was in MPI_Recv from rank 0, tag 7, for 0.98 s when the run ended"
std::string InCallSentence(const json& r) {
  const json& c = r["in_call"];
  std::ostringstream os;
  const std::string fn = c.value("function", "");
  os << "rank " << r.value("rank", -1) << " was in " << fn;
  if (c.contains("peer") && c["peer"].is_number()) {
    os << (c.value("peer_is", "") == "destination" ? " to rank " : " from rank ")
       << c["peer"].get<int>();
  }
  if (c.contains("tag") && c["tag"].is_number()) os << ", tag " << c["tag"].get<int>();
  if (c.contains("communicator") && c["communicator"].is_number() &&
      c["communicator"].get<uint32_t>() != 0)
    os << ", communicator " << c["communicator"].get<uint32_t>();
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f",
                c["seconds"].is_number() ? c["seconds"].get<double>() : 0.0);
  os << ", for " << secs << " s when the run ended";
  return os.str();
}

const char* EndReasonName(uint32_t r) {
  switch (r) {
    case raw::kEndFinalize:
      return "finalize";
    case raw::kEndExit:
      return "exit_without_finalize";
    case raw::kEndAbort:
      return "mpi_abort";
    case raw::kEndSignal:
      return "signal";
    case raw::kEndKilled:
      return "killed";
    default:
      return "running";
  }
}

std::string BinLabel(int b) {
  if (b == 0) return "0";
  uint64_t lo = 1ull << (b - 1);
  if (b == raw::kHistBins - 1) return std::to_string(lo) + "+";
  uint64_t hi = (1ull << b) - 1;
  return std::to_string(lo) + "-" + std::to_string(hi);
}

json Histogram(const uint64_t* hist) {
  json h = json::array();
  for (int b = 0; b < raw::kHistBins; ++b) {
    if (!hist[b]) continue;
    uint64_t lo = b == 0 ? 0 : 1ull << (b - 1);
    json bin = {{"bin", BinLabel(b)}, {"min_bytes", lo}, {"count", hist[b]}};
    if (b < raw::kHistBins - 1) bin["max_bytes"] = b == 0 ? 0 : (1ull << b) - 1;
    h.push_back(bin);
  }
  return h;
}

// min/mean/max over ranks as profile.json gives them.
json AcrossJson(const AcrossRanks& a, int ranks) {
  // Ranks that never called the function count as zero.
  double mn = a.n < ranks ? std::min(0.0, a.min) : a.min;
  double mean = ranks ? a.sum / ranks : 0;
  return json{{"min", a.n ? mn : 0.0},
              {"mean", mean},
              {"max", a.n ? a.max : 0.0},
              {"max_rank", a.argmax},
              {"imbalance", mean > 0 ? a.max / mean : 0.0}};
}

}  // namespace

json BuildProfile(const std::vector<RankData>& ranks_in, const RunMeta& meta, bool incomplete) {
  json problems = json::array();
  // The world size: meta.json's when known, else the first dump's; a dump of another world
  // size belongs to another run.
  int world = meta.world_size > 0 && meta.world_size <= rawio::kMaxWorldSize ? meta.world_size : 0;
  std::vector<const RankData*> ranks;
  std::map<int, size_t> seen;  // rank -> index in ranks_in of the entry kept
  for (size_t i = 0; i < ranks_in.size(); ++i) {
    const auto& h = ranks_in[i].header;
    if (h.magic != raw::kMagic || h.world_size < 1 || h.world_size > rawio::kMaxWorldSize ||
        h.rank < 0 || h.rank >= h.world_size) {
      problems.push_back("dump " + std::to_string(i) + ": not a parsed rank dump; left out");
      continue;
    }
    if (world == 0) world = h.world_size;
    if (h.world_size != world || h.rank >= world) {
      problems.push_back("rank " + std::to_string(h.rank) + ": dump of a world of " +
                         std::to_string(h.world_size) + " ranks, this run has " +
                         std::to_string(world) + "; left out");
      continue;
    }
    auto [it, added] = seen.emplace(h.rank, i);
    if (!added) {
      problems.push_back("rank " + std::to_string(h.rank) + ": given twice (dumps " +
                         std::to_string(it->second) + " and " + std::to_string(i) +
                         "); the first is kept");
      continue;
    }
    ranks.push_back(&ranks_in[i]);
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const RankData* a, const RankData* b) { return a->header.rank < b->header.rank; });

  std::set<int> present;
  RunAggregate agg;
  json jranks = json::array();
  for (const auto* r : ranks) {
    present.insert(r->header.rank);
    agg.AddRank(*r);
    jranks.push_back(RankJson(*r));
  }
  json missing = json::array();
  for (int i = 0; i < world; ++i)
    if (!present.count(i)) missing.push_back(i);
  return ProfileFromAggregate(agg, meta, incomplete, world, std::move(jranks), std::move(missing),
                              std::move(problems));
}

json RankJson(const RankData& rd) {
  const auto& h = rd.header;
  const RankFigures fig(rd);
  json fns = json::object();
  for (const auto& f : rd.funcs) {
    fns[f.name] = {{"calls", f.calls},
                   {"time_s", fig.Seconds(f.ticks)},
                   {"max_call_s", fig.Seconds(f.max_ticks)},
                   {"bytes_sent", f.bytes_sent},
                   {"bytes_recv", f.bytes_recv},
                   {"histogram", Histogram(f.hist)},
                   {"histogram_sent", Histogram(f.hist_sent)},
                   {"histogram_recv", Histogram(f.hist_recv)}};
  }
  const double mpi_s = fig.mpi_s, init_call_s = fig.init_call_s;
  const double mpi_after_init = std::max(0.0, mpi_s - init_call_s);
  const double wall_after_init = std::max(0.0, h.wall_s - std::max(h.mpi_init_s, init_call_s));
  const double share_wo_init = wall_after_init > 0 ? mpi_after_init / wall_after_init : 0.0;
  json j = {{"rank", h.rank},
            {"host", h.host},
            {"pid", h.pid},
            {"wall_s", h.wall_s},
            {"mpi_s", mpi_s},
            {"mpi_share", h.wall_s > 0 ? mpi_s / h.wall_s : 0.0},
            {"mpi_init_s", h.mpi_init_s},
            {"mpi_share_without_init", share_wo_init},
            // The MPI_Init call (as the application saw it) minus PMPI_Init's own
            // time: invmw's start-up. 0 when MPI_Init was not recorded, and in dumps
            // of earlier versions, which counted PMPI_Init's time only.
            {"invmw_init_s", std::max(0.0, init_call_s - h.mpi_init_s)},
            {"incomplete", (h.flags & raw::kFlagIncomplete) != 0},
            {"end", EndReasonName(h.end_reason)},
            {"end_signal", h.end_signal},
            {"threads", h.num_threads},
            {"dropped_thread_calls", h.dropped_threads},
            {"dropped_requests", h.dropped_requests},
            {"errors", h.errors},
            {"functions", fns}};
  j["in_call"] = InCallJson(rd, h);
  return j;
}

json ProfileFromAggregate(const RunAggregate& agg, const RunMeta& meta, bool incomplete, int world,
                          json ranks, json missing, json problems) {
  const int n = agg.ranks;
  bool any_incomplete = incomplete || agg.incomplete || !missing.empty();
  json functions = json::object();
  std::set<std::string> saturated;  // "MPI_Send.calls": sums over ranks that hit 2^64-1
  using F = FunctionAggregate;
  for (const auto& [name, f] : agg.functions) {
    json tot = {{"calls", f.calls},
                {"time_s", f.time_s},
                {"bytes_sent", f.bytes_sent},
                {"bytes_recv", f.bytes_recv}};
    tot["time_across_ranks_s"] = AcrossJson(f.time, n);
    tot["histogram"] = Histogram(f.hist);
    tot["histogram_sent"] = Histogram(f.hist + raw::kHistBins);
    tot["histogram_recv"] = Histogram(f.hist + 2 * raw::kHistBins);
    functions[name] = tot;
    for (const auto& [bit, key] : {std::pair<uint32_t, const char*>{F::kCalls, "calls"},
                                   {F::kBytesSent, "bytes_sent"},
                                   {F::kBytesRecv, "bytes_recv"},
                                   {F::kHist, "histogram"},
                                   {F::kHistSent, "histogram_sent"},
                                   {F::kHistRecv, "histogram_recv"}})
      if (f.saturated & bit) saturated.insert(name + "." + key);
  }
  for (const auto& what : saturated) {
    functions[what.substr(0, what.rfind('.'))]["saturated"] = true;
    problems.push_back(
        "functions." + what +
        ": the sum over ranks exceeds 2^64-1; saturated at 2^64-1 (a corrupt dump?)");
  }
  json meta_j = MetaToJson(meta);
  meta_j["hosts"] = json(std::vector<std::string>(agg.hosts.begin(), agg.hosts.end()));
  meta_j["ranks"] = world;
  if (meta.mpi_library.empty() && n > 0) meta_j["mpi_library"] = agg.first_mpi_library;
  if (meta.invmw_version.empty() && n > 0) meta_j["invmw_version"] = agg.first_invmw_version;

  double wall_max = n ? agg.wall.max : 0;
  json p{{"schema", 1},
         {"tool", "invmw"},
         {"incomplete", any_incomplete},
         {"missing_ranks", missing},
         {"metadata", meta_j},
         {"summary",
          {{"ranks", world},
           {"ranks_reported", n},
           {"wall_s", AcrossJson(agg.wall, n)},
           {"mpi_s", AcrossJson(agg.mpi, n)},
           {"mpi_share", wall_max > 0 && n ? (agg.mpi.sum / n) / (agg.wall.sum / n) : 0.0},
           {"mpi_share_without_init",
            agg.wall_after_init_sum > 0 ? agg.mpi_after_init_sum / agg.wall_after_init_sum : 0.0},
           {"dropped_thread_calls", agg.dropped_thread_calls},
           {"dropped_requests", agg.dropped_requests}}},
         {"functions", functions},
         {"ranks", std::move(ranks)}};
  if (!saturated.empty()) p["counters_saturated"] = true;
  if (!problems.empty()) p["raw_problems"] = problems;
  return p;
}

namespace {

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string Bytes(uint64_t b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = double(b);
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, ++u;
  char s[32];
  std::snprintf(s, sizeof s, u ? "%.2f %s" : "%.0f %s", v, units[u]);
  return s;
}

void RenderResources(const json& p, std::ostringstream& os);

}  // namespace

std::string DroppedNote(const json& p) {
  uint64_t calls = 0, requests = 0;
  const json& s = p.contains("summary") ? p["summary"] : json();
  if (s.is_object() && s.contains("dropped_thread_calls")) {  // the ranks may be in files
    calls = s.value("dropped_thread_calls", uint64_t(0));
    requests = s.value("dropped_requests", uint64_t(0));
  } else {  // profiles of earlier versions
    for (const auto& r : p.value("ranks", json::array())) {
      calls += r.value("dropped_thread_calls", uint64_t(0));
      requests += r.value("dropped_requests", uint64_t(0));
    }
  }
  std::string note;
  if (calls)
    note = std::to_string(calls) +
           " calls from threads beyond INVMW_WRAP_MAX_THREADS (more threads called MPI at the "
           "same time: raise the limit)";
  if (requests)
    note += (note.empty() ? "" : "; ") + std::to_string(requests) +
            " requests whose completion was not recorded (beyond the request table: raise "
            "INVMW_WRAP_MAX_REQUESTS)";
  if (p.contains("callsites") && p["callsites"].is_object())
    if (const uint64_t n = p["callsites"].value("unattributed_calls", uint64_t(0)))
      note += (note.empty() ? "" : "; ") + std::to_string(n) +
              " calls not attributed to a call site (more call sites than "
              "INVMW_WRAP_CALLSITE_SLOTS; counted per function)";
  return note;
}

std::string RenderText(const json& p) {
  std::ostringstream os;
  const auto& m = p["metadata"];
  os << "invmw profile"
     << (p.value("incomplete", false) ? "  [INCOMPLETE: the run did not finish "
                                        "normally; counts cover the calls "
                                        "recorded before the end]"
                                      : "")
     << "\n";
  os << "  command:     " << m.value("command", "") << "\n";
  os << "  started:     " << m.value("start_time", "") << "\n";
  os << "  MPI:         " << m.value("mpi_library", "") << "\n";
  os << "  ranks:       " << m.value("ranks", 0);
  std::string hosts;
  for (const auto& h : m["hosts"]) hosts += (hosts.empty() ? "" : ", ") + h.get<std::string>();
  os << " on " << hosts << "\n";
  if (!p["missing_ranks"].empty())
    os << "  missing:     ranks " << p["missing_ranks"].dump() << " saved no data\n";
  if (p.contains("ranks") && p["ranks"].is_array())
    for (const auto& r : p["ranks"])
      if (r.is_object() && r.contains("in_call") && r["in_call"].is_object())
        os << "  cut off:     " << InCallSentence(r) << "\n";
  if (const std::string d = DroppedNote(p); !d.empty()) os << "  NOT RECORDED: " << d << "\n";
  if (p.contains("raw_problems") && p["raw_problems"].is_array()) {
    os << "  RAW DATA PROBLEMS (left out, or sums saturated):\n";
    for (const auto& s : p["raw_problems"])
      if (s.is_string()) os << "    " << s.get<std::string>() << "\n";
  }
  for (const auto& s : p.value("spawned", json::array()))
    os << "  spawned:     " << s.value("dir", "") << "/ (MPI_Comm_spawn, " << s.value("ranks", 0)
       << " ranks: " << s.value("command", "?") << ")"
       << (s.value("profile", false) ? "" : " [no profile.json yet]") << "\n";
  if (m.contains("clock_sync")) {
    const auto& c = m["clock_sync"];
    bool finalize = false;
    for (const auto& r : c["ranks"]) finalize |= r.contains("finalize");
    os << "  clock sync:  offsets to rank 0 within "
       << Fmt("%.3f", 1e6 * c.value("max_uncertainty_s", 0.0)) << " us (measured at MPI_Init"
       << (finalize ? " and MPI_Finalize" : "") << ")\n";
  }
  const auto& s = p["summary"];
  os << "  wall time:   " << Fmt("%.6f", s["wall_s"]["max"].get<double>())
     << " s (max over ranks)\n";
  // Without start-up first: MPI_Init's time says little about the application's own use of MPI.
  os << "  MPI share:   ";
  if (s.contains("mpi_share_without_init"))
    os << Fmt("%.1f", 100 * s["mpi_share_without_init"].get<double>())
       << " % of wall time after MPI_Init (" << Fmt("%.1f", 100 * s["mpi_share"].get<double>())
       << " % with MPI_Init)\n\n";
  else
    os << Fmt("%.1f", 100 * s["mpi_share"].get<double>()) << " % of wall time\n\n";

  // Functions sorted by total time.
  std::vector<std::pair<double, std::string>> order;
  for (auto it = p["functions"].begin(); it != p["functions"].end(); ++it)
    order.emplace_back(it.value()["time_s"].get<double>(), it.key());
  std::sort(order.rbegin(), order.rend());
  char line[512];
  std::snprintf(line, sizeof line, "%-24s %10s %12s %12s %12s %12s %9s %13s %13s\n", "function",
                "calls", "time_s", "min_rank_s", "mean_rank_s", "max_rank_s", "imbalance",
                "bytes_sent", "bytes_recv");
  os << "Per function, all ranks (min/mean/max of the per-rank time; imbalance = max/mean)\n"
     << line;
  uint64_t finalize_calls = 0;
  for (const auto& [t, name] : order) {
    const auto& f = p["functions"][name];
    if (name == "MPI_Finalize") {  // see the footnote below
      finalize_calls = f["calls"].get<uint64_t>();
      continue;
    }
    const auto& a = f["time_across_ranks_s"];
    std::snprintf(line, sizeof line, "%-24s %10llu %12.6f %12.6f %12.6f %12.6f %9.2f %13s %13s\n",
                  name.c_str(), (unsigned long long)f["calls"].get<uint64_t>(), t,
                  a["min"].get<double>(), a["mean"].get<double>(), a["max"].get<double>(),
                  a["imbalance"].get<double>(), Bytes(f["bytes_sent"].get<uint64_t>()).c_str(),
                  Bytes(f["bytes_recv"].get<uint64_t>()).c_str());
    os << line;
  }
  if (finalize_calls)
    os << "  (MPI_Finalize, " << finalize_calls
       << " calls, is not in this table: the profile is taken at its entry, while MPI still "
          "works to gather it, so the MPI library's shut-down cannot be timed)\n";

  if (p.contains("rank_files") && p["rank_files"].is_object())
    os << "\nPer rank: " << p["rank_files"].value("ranks", 0)
       << " ranks, more than INVMW_PROFILE_INLINE_RANKS; their tables are in "
       << p["rank_files"].value("files", std::string())
       << " (`invmw profile DIR` adds them here)\n";
  os << "\nPer rank\n";
  std::snprintf(line, sizeof line, "%6s %-20s %12s %12s %8s  %s\n", "rank", "host", "wall_s",
                "mpi_s", "mpi_%", "end");
  os << line;
  for (const auto& r : p["ranks"]) {
    std::snprintf(line, sizeof line, "%6d %-20s %12.6f %12.6f %8.1f  %s\n", r["rank"].get<int>(),
                  r["host"].get<std::string>().c_str(), r["wall_s"].get<double>(),
                  r["mpi_s"].get<double>(), 100 * r["mpi_share"].get<double>(),
                  r["end"].get<std::string>().c_str());
    os << line;
  }

  os << "\nPer rank and function\n";
  std::snprintf(line, sizeof line, "%6s %-24s %10s %12s %13s %13s\n", "rank", "function", "calls",
                "time_s", "bytes_sent", "bytes_recv");
  os << line;
  for (const auto& r : p["ranks"]) {
    for (auto it = r["functions"].begin(); it != r["functions"].end(); ++it) {
      const auto& f = it.value();
      std::snprintf(line, sizeof line, "%6d %-24s %10llu %12.6f %13s %13s\n", r["rank"].get<int>(),
                    it.key().c_str(), (unsigned long long)f["calls"].get<uint64_t>(),
                    f["time_s"].get<double>(), Bytes(f["bytes_sent"].get<uint64_t>()).c_str(),
                    Bytes(f["bytes_recv"].get<uint64_t>()).c_str());
      os << line;
    }
  }

  os << "\nMessage sizes (messages per size bin, all ranks; sent and received apart, a "
        "nonblocking receive under the call that posted it)\n";
  for (const auto& [t, name] : order) {
    const auto& f = p["functions"][name];
    bool moves = false;
    for (const char* key : {"histogram", "histogram_sent", "histogram_recv"})
      for (const auto& b : f.value(key, json::array())) moves |= b["min_bytes"].get<uint64_t>() > 0;
    if (!moves) continue;
    // Dumps without direction histograms (the PVM runtime) keep the per-call one.
    const bool by_dir = !f.value("histogram_sent", json::array()).empty() ||
                        !f.value("histogram_recv", json::array()).empty();
    for (const auto& [key, dir] : {std::pair<const char*, const char*>{"histogram_sent", "sent"},
                                   {"histogram_recv", "recv"},
                                   {"histogram", "all"}}) {
      if (by_dir == (std::strcmp(key, "histogram") == 0)) continue;
      const json h = f.value(key, json::array());
      if (h.empty()) continue;
      std::snprintf(line, sizeof line, "  %-24s %-4s:", name.c_str(), dir);
      os << line;
      for (const auto& b : h)
        os << "  [" << b["bin"].get<std::string>() << " B] " << b["count"].get<uint64_t>();
      os << "\n";
    }
  }
  RenderCallSites(p, os);
  RenderResources(p, os);
  return os.str();
}

int AttachSpawned(json* profile, const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, "spawned-", 8) == 0) names.push_back(e->d_name);
    closedir(d);
  }
  if (names.empty()) return 0;
  std::sort(names.begin(), names.end());
  json list = json::array();
  for (const auto& n : names) {
    const std::string sub = dir + "/" + n;
    json entry = {{"dir", n},
                  {"profile", access((sub + "/profile.json").c_str(), F_OK) == 0},
                  {"trace", access((sub + "/traces.otf2").c_str(), F_OK) == 0}};
    // meta.json is written by the spawned world's rank 0 at its MPI_Init; a world that has not
    // got that far (or a damaged file) is still listed, by its directory alone.
    try {
      std::ifstream in(sub + "/meta.json");
      if (in) {
        json m = json::parse(in);
        entry["ranks"] = m.value("world_size", 0);
        entry["command"] = m.value("command", "");
        entry["start_time"] = m.value("start_time", "");
      }
    } catch (const std::exception& e) {
      entry["problem"] = n + "/meta.json: " + e.what();
    }
    list.push_back(std::move(entry));
  }
  (*profile)["spawned"] = list;
  return int(list.size());
}

int AttachResources(json* profile, const std::string& dir) {
  const std::string raw_dir = dir + "/raw";
  std::vector<std::string> files;
  if (DIR* d = opendir(raw_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      int32_t rank = 0;
      if (n.rfind("resources-", 0) == 0 && n.size() > 15 &&
          n.compare(n.size() - 5, 5, ".json") == 0 &&
          rawio::ParseNameNumber(std::string_view(n).substr(10, n.size() - 15), 6, &rank))
        files.push_back(n);
    }
    closedir(d);
  }
  if (files.empty()) return 0;
  std::sort(files.begin(), files.end());
  json ranks = json::array(), problems = json::array();
  double user = 0, sys = 0, io_r = 0, io_w = 0;
  json counters = json::object();
  for (const auto& f : files) {
    try {
      std::string text, err;
      // A summary is a few kilobytes; FIFOs and devices are not read (they would block).
      if (!rawio::ReadRegularFile(raw_dir + "/" + f, 64 << 20, &text, &err))
        throw std::runtime_error(err);
      json r = json::parse(text);
      if (!r.is_object()) throw std::runtime_error("not a JSON object");
      r.erase("metrics");  // the full list stays in the raw file; the profile keeps the summary
      auto num = [&](const char* k) {
        return r.contains(k) && r[k].is_number() ? r[k].get<double>() : 0.0;
      };
      user += num("cpu_user_s");
      sys += num("cpu_system_s");
      io_r += num("io_read_bytes");
      io_w += num("io_write_bytes");
      if (r.contains("counters") && r["counters"].is_object())
        for (auto it = r["counters"].begin(); it != r["counters"].end(); ++it)
          counters[it.key()] = counters.value(it.key(), 0.0) + it.value().get<double>();
      ranks.push_back(std::move(r));
    } catch (const std::exception& e) {
      problems.push_back("raw/" + f + ": " + e.what());
    }
  }
  (*profile)["resources"] = {{"ranks", ranks},
                             {"totals",
                              {{"cpu_user_s", user},
                               {"cpu_system_s", sys},
                               {"io_read_bytes", io_r},
                               {"io_write_bytes", io_w},
                               {"counters", counters}}}};
  if (!problems.empty()) (*profile)["resources"]["problems"] = problems;
  return int(ranks.size());
}

namespace {

// The "Resources per rank" section of profile.txt (only when AttachResources found summaries).
void RenderResources(const json& p, std::ostringstream& os) {
  if (!p.contains("resources")) return;
  const auto& res = p["resources"];
  auto num = [](const json& r, const char* k) {
    return r.contains(k) && r[k].is_number() ? r[k].get<double>() : 0.0;
  };
  char line[512];
  os << "\nResources per rank (sampler; net = the node's devices, on the node's first rank)\n";
  std::snprintf(line, sizeof line, "%6s %-16s %10s %10s %6s %11s %11s %11s %11s %11s %8s\n", "rank",
                "host", "cpu_user_s", "cpu_sys_s", "cpu_%", "rss_peak", "io_read", "io_write",
                "net_rx", "net_tx", "samples");
  os << line;
  for (const auto& r : res["ranks"]) {
    const double wall = num(r, "wall_s");
    const double cpu = num(r, "cpu_user_s") + num(r, "cpu_system_s");
    const bool net = r.contains("node_net_rx_bytes") && r["node_net_rx_bytes"].is_number();
    std::snprintf(line, sizeof line,
                  "%6d %-16s %10.3f %10.3f %6.1f %11s %11s %11s %11s %11s %8llu\n",
                  r.value("rank", -1), r.value("host", std::string()).c_str(), num(r, "cpu_user_s"),
                  num(r, "cpu_system_s"), wall > 0 ? 100 * cpu / wall : 0.0,
                  Bytes(uint64_t(num(r, "rss_peak_bytes"))).c_str(),
                  Bytes(uint64_t(num(r, "io_read_bytes"))).c_str(),
                  Bytes(uint64_t(num(r, "io_write_bytes"))).c_str(),
                  net ? Bytes(uint64_t(num(r, "node_net_rx_bytes"))).c_str() : "-",
                  net ? Bytes(uint64_t(num(r, "node_net_tx_bytes"))).c_str() : "-",
                  (unsigned long long)num(r, "samples"));
    os << line;
  }
  const auto& c = res["totals"]["counters"];
  if (!c.empty()) {
    os << "  counters (all ranks):";
    for (auto it = c.begin(); it != c.end(); ++it)
      os << "  " << it.key() << " " << Fmt("%.6g", it.value().get<double>());
    os << "\n";
  }
}

}  // namespace

// Writes data to a new temporary file beside path, then gives it the name path: replacing what
// is there (replace) or only when nothing is (a run's first write into its directory: an entry
// there is not ours, and a link planted there is never followed). The temporary's name is not
// guessable and it is created exclusively, so nothing planted can redirect the write either.
static bool WriteAtomically(const std::string& path, const std::string& data, bool replace,
                            std::string* error, std::string* existed) {
  static std::atomic<unsigned> serial{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(serial++) + "." +
          std::to_string(ts.tv_nsec);
    fd = CreateNewFile(tmp);
    if (fd < 0 && errno != EEXIST) {
      *error = tmp + ": cannot create: " + std::strerror(errno);
      return false;
    }
  }
  if (fd < 0) {
    *error = path + ": no free temporary name beside it";
    return false;
  }
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += size_t(w);
  }
  const bool closed = close(fd) == 0;
  if (done != data.size() || !closed) {
    *error = tmp + ": write failed: " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  if (replace ? std::rename(tmp.c_str(), path.c_str()) == 0 : PublishNewFile(tmp, path))
    return true;
  const int err = errno;
  if (err == EEXIST && existed) *existed = path;
  *error = err == EEXIST ? path +
                               ": something is there already (invmw never writes over or "
                               "through an entry it did not create); not written"
                         : path + ": rename failed: " + std::strerror(err);
  unlink(tmp.c_str());
  return false;
}

bool WriteMeta(const std::string& dir, const RunMeta& m, std::string* error, bool replace,
               std::string* existed) {
  // Beyond RLIMIT_FSIZE: an error, not SIGXFSZ ending the application (or `invmw run`).
  IgnoreSigxfsz sigxfsz;
  return WriteAtomically(dir + "/meta.json", MetaToJson(m).dump(2) + "\n", replace, error, existed);
}

std::string RankFilePath(const std::string& dir, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "/raw/profile-%06d.json", rank);
  return dir + name;
}

bool WriteRankFile(const std::string& dir, int rank, const json& entry, std::string* error) {
  IgnoreSigxfsz sigxfsz;  // as in WriteMeta
  return WriteAtomically(RankFilePath(dir, rank),
                         entry.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", false,
                         error, nullptr);
}

bool ReadRankFiles(const std::string& dir, int ranks, json* out, std::string* error) {
  json list = json::array();
  for (int i = 0; i < ranks; ++i) {
    const std::string path = RankFilePath(dir, i);
    std::string text, err;
    if (!rawio::ReadRegularFile(path, 256 << 20, &text, &err)) {
      *error = path + ": " + err;
      return false;
    }
    json e = json::parse(text, nullptr, false);
    if (e.is_discarded() || !e.is_object() || !e.contains("functions") ||
        !e["functions"].is_object()) {
      *error = path + ": not a rank's profile entry (a JSON object with \"functions\")";
      return false;
    }
    if (!e.contains("rank") || !e["rank"].is_number_integer() || e["rank"].get<int64_t>() != i) {
      *error = path + ": \"rank\" is " + (e.contains("rank") ? e["rank"].dump() : "missing") +
               ", expected " + std::to_string(i);
      return false;
    }
    list.push_back(std::move(e));
  }
  *out = std::move(list);
  return true;
}

bool AssembleRankFiles(const std::string& dir, bool* assembled, std::string* error) {
  *assembled = false;
  try {
    std::string text, err;
    if (!rawio::ReadRegularFile(dir + "/profile.json", 1ull << 34, &text, &err)) {
      *error = dir + "/profile.json: " + err;
      return false;
    }
    json p = json::parse(text, nullptr, false);
    if (p.is_discarded() || !p.is_object()) {
      *error = dir + "/profile.json: not a JSON object";
      return false;
    }
    if (!p.contains("rank_files") || !p["rank_files"].is_object()) return true;
    const json& rf = p["rank_files"];
    if (!rf.contains("ranks") || !rf["ranks"].is_number_integer() ||
        rf["ranks"].get<int64_t>() < 0 || rf["ranks"].get<int64_t>() > rawio::kMaxWorldSize) {
      *error = dir + "/profile.json: rank_files.ranks: expected a rank count 0.." +
               std::to_string(rawio::kMaxWorldSize);
      return false;
    }
    json ranks;
    if (!ReadRankFiles(dir, rf["ranks"].get<int>(), &ranks, error)) return false;
    p["ranks"] = std::move(ranks);
    p.erase("rank_files");
    if (!WriteProfile(dir, p, error)) return false;
    *assembled = true;
    return true;
  } catch (const std::exception& e) {
    *error = dir + "/profile.json: the ranks could not be added: " + e.what();
    return false;
  }
}

bool WriteProfile(const std::string& dir, const json& profile, std::string* error, bool replace,
                  std::string* existed) {
  IgnoreSigxfsz sigxfsz;  // as in WriteMeta
  // Host and library names come from raw dumps: bytes that are not UTF-8 become U+FFFD
  // instead of an exception.
  return WriteAtomically(dir + "/profile.json",
                         profile.dump(2, ' ', false, json::error_handler_t::replace) + "\n",
                         replace, error, existed) &&
         WriteAtomically(dir + "/profile.txt", RenderText(profile), replace, error, existed);
}

namespace {

bool MergeDirectoryOrThrow(const std::string& dir, std::string* error, int* ranks_found,
                           std::vector<std::string>* problems) {
  RunMeta meta;
  {
    std::string text, err;
    struct stat st;
    const std::string path = dir + "/meta.json";
    if (lstat(path.c_str(), &st) == 0) {
      if (!rawio::ReadRegularFile(path, 64 << 20, &text, &err)) {
        *error = path + ": " + err;
        return false;
      }
      try {
        json j = json::parse(text);
        if (!MetaFromJson(j, &meta, error)) return false;
      } catch (const std::exception& e) {
        *error = path + ": " + e.what();
        return false;
      }
      if (meta.world_size < 0 || meta.world_size > rawio::kMaxWorldSize) {
        *error = path + ": world_size " + std::to_string(meta.world_size) + " is outside 0.." +
                 std::to_string(rawio::kMaxWorldSize);
        return false;
      }
    }
  }
  std::string raw_dir = dir + "/raw";
  DIR* d = opendir(raw_dir.c_str());
  if (!d) {
    *error = raw_dir +
             ": no per-rank data (was the program run under invmw, and did it call "
             "MPI_Init?)";
    return false;
  }
  std::vector<std::string> found;    // what is wrong, one line per file
  std::map<int, std::string> names;  // rank -> file name
  std::map<int, std::string> live;   // rank -> live counter file name
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    int rank = 0;
    if (n.rfind("live-", 0) == 0) {  // raw_format.h LiveHeader: a rank that saved no dump
      if (ParseDumpFileName("rank-" + n.substr(5), &rank))
        live[rank] = n;
      else
        found.push_back(raw_dir + "/" + n +
                        ": not a live counter file name (live-NNNNNN.bin); ignored");
      continue;
    }
    if (n.rfind("rank-", 0) != 0) continue;  // other runtime files, not for the profile
    if (ParseDumpFileName(n, &rank))
      names[rank] = n;
    else
      found.push_back(raw_dir + "/" + n + ": not a rank dump name (rank-NNNNNN.bin); ignored");
  }
  closedir(d);
  std::vector<RankData> ranks;
  std::map<int, std::string> file_of;  // rank -> file whose dump was kept
  // Keeps r, read from raw_dir/n for rank, unless it is another rank's or another world's.
  auto keep = [&](int rank, const std::string& n, RankData&& r) {
    const std::string path = raw_dir + "/" + n;
    if (r.header.rank != rank) {
      // A copy, or a file renamed by hand: counting it would count its rank twice.
      std::string also;
      if (names.count(r.header.rank))
        also = "; rank " + std::to_string(r.header.rank) + " has its own file " + raw_dir + "/" +
               names[r.header.rank];
      found.push_back(path + ": holds the dump of rank " + std::to_string(r.header.rank) +
                      ", not of rank " + std::to_string(rank) + also + "; ignored");
      return;
    }
    const int world = meta.world_size > 0 ? meta.world_size
                      : ranks.empty()     ? r.header.world_size
                                          : ranks.front().header.world_size;
    if (r.header.world_size != world || rank >= world) {
      found.push_back(
          path + ": dump of a world of " + std::to_string(r.header.world_size) + " ranks, but " +
          (meta.world_size > 0 ? dir + "/meta.json" : raw_dir + "/" + file_of.begin()->second) +
          " says " + std::to_string(world) + "; ignored");
      return;
    }
    file_of[rank] = n;
    ranks.push_back(std::move(r));
  };
  for (const auto& [rank, n] : names) {
    RankData r;
    std::string err;
    const std::string path = raw_dir + "/" + n;
    // The runtime creates its rank's file at MPI_Init and fills it at the end: an empty one is
    // a rank that saved nothing (killed), like a missing one.
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) continue;
    if (!ReadDumpFile(path, &r, &err)) {
      found.push_back(err + "; ignored");
      continue;
    }
    keep(rank, n, std::move(r));
  }
  // A rank that saved no dump (SIGKILL runs no handler): its live counters, which hold every
  // call it completed. A rank with a dump removes its live file; should one remain, the dump
  // wins, being the rank's own last word.
  for (const auto& [rank, n] : live) {
    if (file_of.count(rank)) continue;
    RankData r;
    std::string err;
    if (!ReadLiveFile(raw_dir + "/" + n, &r, &err)) {
      found.push_back(err + "; ignored");
      continue;
    }
    keep(rank, n, std::move(r));
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const RankData& a, const RankData& b) { return a.header.rank < b.header.rank; });
  if (ranks_found) *ranks_found = int(ranks.size());
  if (problems) *problems = found;
  if (ranks.empty()) {
    std::string list;  // the caller that takes the problems prints them itself
    if (!problems)
      for (const auto& f : found) list += "\n" + f;
    *error = raw_dir + ": no readable rank data" + list;
    return false;
  }
  bool incomplete = false;
  for (const auto& r : ranks) incomplete |= (r.header.flags & raw::kFlagIncomplete) != 0;
  json p = BuildProfile(ranks, meta, incomplete);
  if (!found.empty()) {
    json all = json(found);
    std::string joined;
    for (const auto& f : found) joined += f + "\n";
    p["unreadable_dumps"] = joined;  // the same lines as one string (older readers)
    for (const auto& more : p.value("raw_problems", json::array())) {
      all.push_back(more);
      if (problems) problems->push_back(more.get<std::string>());
    }
    p["raw_problems"] = all;
  } else if (problems) {
    for (const auto& more : p.value("raw_problems", json::array()))
      problems->push_back(more.get<std::string>());
  }
  AttachResources(&p, dir);
  AttachSpawned(&p, dir);
  return WriteProfile(dir, p, error);
}

}  // namespace

bool MergeDirectory(const std::string& dir, std::string* error, int* ranks_found,
                    std::vector<std::string>* problems) {
  try {
    return MergeDirectoryOrThrow(dir, error, ranks_found, problems);
  } catch (const std::exception& e) {  // out of memory, a JSON error: an error, never an abort
    *error = dir + ": the profile could not be built: " + e.what();
    return false;
  }
}

}  // namespace invmw::profile
