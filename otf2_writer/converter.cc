#include "otf2_writer/converter.h"

#include <otf2/otf2.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "otf2_writer/clock_model.h"
#include "otf2_writer/comm_map.h"
#include "otf2_writer/conversion.h"
#include "otf2_writer/function_info.h"
#include "otf2_writer/otf2_open.h"
#include "otf2_writer/output_files.h"
#include "otf2_writer/raw_run.h"
#include "otf2_writer/raw_samples.h"
#include "otf2_writer/trace_callsites.h"

namespace invmw::otf2 {
namespace fs = std::filesystem;
using conv::Conversion;
using conv::InvmwRegions;
using conv::LocationOut;
using conv::MetricDefs;
using conv::Region;
using conv::RegionTable;
using trace::EventRecord;

bool ConvertOptions::IsValid(std::string* error) const {
  if (archive_name.empty() || archive_name.find('/') != std::string::npos) {
    if (error) *error = "ConvertOptions::archive_name must be a non-empty name without '/'";
    return false;
  }
  if (chunk_size_events < OTF2_CHUNK_SIZE_MIN || chunk_size_events > OTF2_CHUNK_SIZE_MAX ||
      chunk_size_defs < OTF2_CHUNK_SIZE_MIN || chunk_size_defs > OTF2_CHUNK_SIZE_MAX) {
    if (error)
      *error =
          "ConvertOptions::chunk_size_events/defs must be within 256 KiB .. 16 MiB (OTF2's limits)";
    return false;
  }
  return true;
}

namespace {

void Check(OTF2_ErrorCode rc, const char* what) {
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error(std::string("OTF2 error in ") + what + ": " + OTF2_Error_GetName(rc) +
                             " (" + OTF2_Error_GetDescription(rc) + ")");
}

// The attributes invmw defines: the count of coalesced unsuccessful tests, and what a
// nonblocking receive was posted for. OTF2's MpiIrecvRequest carries only the request; without
// its source, tag and communicator a receive that never completes cannot take its place in
// MPI's matching order, and every later message on its channel would pair with the wrong
// receive (trace_reader.h, Trace::uncompleted_recvs).
constexpr OTF2_AttributeRef kCoalescedAttribute = 0;
constexpr OTF2_AttributeRef kPostedSourceAttribute = 1;  // communicator rank, -1 any source
constexpr OTF2_AttributeRef kPostedTagAttribute = 2;     // -1 any tag
constexpr OTF2_AttributeRef kPostedCommAttribute = 3;
// On the Leave of a call the run's abnormal end cut off (trace::kCutOff): the call did not
// return; its Leave is the time the rank's recording ended. The Enter of such a call carries
// the posted_* attributes for what it waited for, when known.
constexpr OTF2_AttributeRef kCutOffAttribute = 4;
// The Enter of a call whose call site the rank recorded: its calling context (a CallingContext
// whose region is the application's function and SourceCodeLocation the line, named by object
// and offset until the finish step resolves them, callsite_names.h). Defined only when the
// trace has contexts.
constexpr OTF2_AttributeRef kCallSiteAttribute = 5;

class Strings {
 public:
  OTF2_StringRef operator()(const std::string& s) {
    auto [it, added] = refs_.emplace(s, OTF2_StringRef(order_.size()));
    if (added) order_.push_back(s);
    return it->second;
  }
  // A string of its own, never shared: one the finish step rewrites (callsite_names.h).
  OTF2_StringRef Fresh(const std::string& s) {
    order_.push_back(s);
    return OTF2_StringRef(order_.size() - 1);
  }
  void Write(OTF2_GlobalDefWriter* w) const {
    for (size_t i = 0; i < order_.size(); ++i)
      Check(OTF2_GlobalDefWriter_WriteString(w, OTF2_StringRef(i), order_[i].c_str()), "String");
  }

 private:
  std::unordered_map<std::string, OTF2_StringRef> refs_;
  std::vector<std::string> order_;
};

// A record of one thread that becomes one Enter..Leave (or a lone event), with the
// completion/flush/cancel records that happened inside it.
struct Unit {
  const EventRecord* rec;
  std::vector<const EventRecord*> nested;
  // Persistent requests this MPI_Start/MPI_Startall started (request id, bytes), found by
  // AttachPersistentStarts because start records carry no request id.
  std::vector<std::pair<uint64_t, uint64_t>> starts;
  // Counter values at the call's entry and exit (a kCounters record stored just before it).
  const trace::CounterRecord* counters = nullptr;
  uint32_t site1 = 0;  // kCall: its call-site slot + 1 in its thread's table (0: none)
};

// Writes one rank's samples as asynchronous metrics on the rank's metric location. Stamps are
// the rank's trace-clock ticks, like its MPI events, so the same clock offsets apply.
bool WriteRankMetrics(OTF2_Archive* archive, const RawSamples& s, const ClockModel& clock,
                      MetricDefs* defs, LocationOut* out) {
  if (s.metrics.empty() || s.size() == 0) return false;
  constexpr size_t kMaxPerClass = 255;
  struct Chunk {
    uint32_t cls;
    size_t first, count;
  };
  std::vector<Chunk> chunks;
  for (size_t first = 0; first < s.metrics.size(); first += kMaxPerClass) {
    const size_t count = std::min(kMaxPerClass, s.metrics.size() - first);
    std::vector<uint32_t> set;
    for (size_t k = first; k < first + count; ++k) set.push_back(defs->MemberRef(s.metrics[k]));
    chunks.push_back({defs->ClassRef(set), first, count});
    out->metric_classes.push_back(chunks.back().cls);
  }
  out->id = LocationId(s.rank, kMetricLocationThread);
  out->rank = s.rank;
  out->name = "rank " + std::to_string(s.rank) + " metrics";
  out->type = OTF2_LOCATION_TYPE_METRIC;
  OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, out->id);
  if (!w) throw std::runtime_error("OTF2_Archive_GetEvtWriter failed");
  std::vector<OTF2_Type> types(kMaxPerClass, OTF2_TYPE_DOUBLE);
  std::vector<OTF2_MetricValue> values(kMaxPerClass);
  uint64_t last = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const uint64_t t = std::max(last, s.ticks[i]);
    last = t;
    const uint64_t g = clock.ToGlobal(t);
    out->first_global = std::min(out->first_global, g);
    out->last_global = std::max(out->last_global, g);
    for (const Chunk& c : chunks) {
      for (size_t k = 0; k < c.count; ++k) values[k].floating_point = s.at(i, c.first + k);
      Check(OTF2_EvtWriter_Metric(w, nullptr, t, c.cls, uint8_t(c.count), types.data(),
                                  values.data()),
            "Metric");
      ++out->events;
    }
  }
  Check(OTF2_Archive_CloseEvtWriter(archive, w), "CloseEvtWriter");
  return true;
}

struct ReqState {
  enum Kind : uint8_t { kSend, kRecv, kColl, kOther } kind = kOther;
  bool persistent = false, started = false, cancelled = false, null_peer = false;
  uint32_t gcomm = 0;
  int32_t peer = -1, tag = 0, root = -1;
  uint64_t bytes = 0, sent = 0, recv = 0;
  OTF2_CollectiveOp coll = OTF2_COLLECTIVE_OP_BARRIER;
};

// Writes the events of one rank: all its threads merged in time order, so a request started
// on one thread and completed on another is still followed.
class RankWriter {
 public:
  RankWriter(OTF2_Archive* archive, const RawRank& rank, const CommMap& comms,
             const std::vector<FunctionInfo>& funcs, const std::vector<OTF2_RegionRef>& regions,
             OTF2_RegionRef flush_region, OTF2_RegionRef pause_region, OTF2_RegionRef init_region,
             const ClockModel& clock, std::map<std::string, uint64_t>* issues)
      : archive_(archive),
        rank_(rank),
        comms_(comms),
        funcs_(funcs),
        regions_(regions),
        flush_region_(flush_region),
        pause_region_(pause_region),
        init_region_(init_region),
        clock_(clock),
        issues_(issues),
        coalesced_attrs_(OTF2_AttributeList_New()) {}
  ~RankWriter() { OTF2_AttributeList_Delete(coalesced_attrs_); }
  // The synchronous metric class of this rank's per-call counters (INVMW_TRACE_COUNTERS).
  void SetCounterClass(uint32_t cls) { sync_class_ = cls; }
  // The rank's call sites: (thread index, slot) -> calling context reference.
  void SetContexts(std::map<std::pair<int32_t, uint32_t>, uint32_t> ctx) {
    contexts_ = std::move(ctx);
  }
  RankWriter(const RankWriter&) = delete;
  RankWriter& operator=(const RankWriter&) = delete;

  uint64_t Run(std::vector<LocationOut>* outs) {
    const size_t nthreads = rank_.threads.size();
    std::vector<std::vector<Unit>> units(nthreads);
    for (size_t i = 0; i < nthreads; ++i)
      units[i] = MakeUnits(rank_.threads[i].records, rank_.threads[i].site_slots);
    writers_.resize(nthreads);
    last_.assign(nthreads, 0);
    locs_.resize(nthreads);
    for (size_t i = 0; i < nthreads; ++i) {
      locs_[i].id = LocationId(rank_.rank, rank_.threads[i].index);
      locs_[i].rank = rank_.rank;
      locs_[i].name = "rank " + std::to_string(rank_.rank) + " " + rank_.threads[i].name;
      writers_[i] = OTF2_Archive_GetEvtWriter(archive_, locs_[i].id);
      if (!writers_[i]) throw std::runtime_error("OTF2_Archive_GetEvtWriter failed");
    }
    // k-way merge by the start of each thread's next unit; per-thread order is kept.
    std::vector<std::pair<size_t, size_t>> order;  // (thread, unit)
    std::vector<size_t> pos(nthreads, 0);
    while (true) {
      size_t best = nthreads;
      for (size_t i = 0; i < nthreads; ++i)
        if (pos[i] < units[i].size() &&
            (best == nthreads ||
             units[i][pos[i]].rec->t_enter < units[best][pos[best]].rec->t_enter))
          best = i;
      if (best == nthreads) break;
      order.emplace_back(best, pos[best]++);
    }
    AttachPersistentStarts(&units, order);
    uint64_t events = 0;
    for (const auto& [thread, unit] : order) {
      cur_ = thread;
      WriteUnit(units[thread][unit]);
    }
    for (size_t i = 0; i < nthreads; ++i) {
      Check(OTF2_Archive_CloseEvtWriter(archive_, writers_[i]), "CloseEvtWriter");
      events += locs_[i].events;
      outs->push_back(locs_[i]);
    }
    return events;
  }

 private:
  // MPI_Start/MPI_Startall records name no request, so each cycle of a persistent request
  // (start .. completion or cancellation) is given the earliest start call of its rank after
  // the previous cycle ended. Earliest, because a start placed too early keeps every message
  // causal (its send begins before its receive ends), while one placed too late may not.
  void AttachPersistentStarts(std::vector<std::vector<Unit>>* units,
                              const std::vector<std::pair<size_t, size_t>>& order) {
    std::unordered_map<uint64_t, size_t> cycle_begin;   // persistent request -> position
    std::unordered_map<uint64_t, bool> explicit_start;  // a start record named it this cycle
    std::vector<size_t> starts;                         // positions of anonymous start calls
    auto unit_at = [&](size_t p) -> Unit& { return (*units)[order[p].first][order[p].second]; };
    for (size_t p = 0; p < order.size(); ++p) {
      const Unit& u = unit_at(p);
      const EventRecord& r = *u.rec;
      if (r.type == trace::kCall && r.func < funcs_.size()) {
        const Op op = funcs_[r.func].op;
        if ((op == Op::kSendInit || op == Op::kRecvInit) && r.request) cycle_begin[r.request] = p;
        if (op == Op::kStart) {
          if (r.request)
            explicit_start[r.request] = true;
          else
            starts.push_back(p);
        }
      }
      auto end_of_cycle = [&](const EventRecord& c) {
        if (c.type != trace::kCompletion && c.type != trace::kCancelled) return;
        auto begin = cycle_begin.find(c.request);
        if (begin == cycle_begin.end()) return;  // not persistent
        if (!explicit_start[c.request]) {
          auto it = std::upper_bound(starts.begin(), starts.end(), begin->second);
          if (it != starts.end() && *it < p)
            unit_at(*it).starts.emplace_back(c.request, c.bytes_sent);
        }
        explicit_start[c.request] = false;
        begin->second = p;
      };
      end_of_cycle(r);
      for (const EventRecord* n : u.nested) end_of_cycle(*n);
    }
  }

  static bool Nestable(uint8_t type) {
    return type == trace::kCompletion || type == trace::kFlush || type == trace::kCancelled ||
           type == trace::kSendPart || type == trace::kRecvPart || type == trace::kInit;
  }

  std::vector<Unit> MakeUnits(const std::vector<EventRecord>& recs,
                              const std::vector<uint32_t>& site_slots) {
    std::vector<Unit> out;
    out.reserve(recs.size());
    std::vector<const EventRecord*> pending;
    const trace::CounterRecord* counters = nullptr;
    for (const EventRecord& r : recs) {
      if (Nestable(r.type)) {
        pending.push_back(&r);
        continue;
      }
      if (r.type == trace::kCounters) {
        counters = reinterpret_cast<const trace::CounterRecord*>(&r);
        continue;
      }
      if (r.type > trace::kPause && r.type != trace::kCutOff) {
        ++(*issues_)["records of unknown type skipped"];
        continue;
      }
      Unit u{&r, {}, {}, nullptr};
      if (!site_slots.empty()) u.site1 = site_slots[size_t(&r - recs.data())];
      if (r.type == trace::kCall && counters && counters->func == r.func &&
          counters->count <= rank_.counter_names.size() && sync_class_ != kNoClass)
        u.counters = counters;
      counters = nullptr;
      if (r.type != trace::kCall) {
        // Not a call, so nothing nests in it: what happened before it goes out first.
        auto before =
            std::stable_partition(pending.begin(), pending.end(),
                                  [&](const EventRecord* p) { return p->t_enter < r.t_enter; });
        for (auto it = pending.begin(); it != before; ++it) out.push_back({*it, {}, {}});
        pending.erase(pending.begin(), before);
      } else {
        std::vector<const EventRecord*> after;
        for (const EventRecord* p : pending) {
          if (p->t_enter < r.t_enter)
            out.push_back({p, {}, {}});  // happened before this call: on its own
          else if (p->t_enter <= r.t_leave)
            u.nested.push_back(p);
          else
            after.push_back(p);  // e.g. a buffer flush while the call's record was stored
        }
        pending = std::move(after);
      }
      out.push_back(std::move(u));
    }
    for (const EventRecord* p : pending) out.push_back({p, {}, {}});
    return out;
  }

  // Every timestamp goes through here: local ticks, never decreasing per location.
  uint64_t T(uint64_t t) {
    uint64_t& last = last_[cur_];
    if (t < last) {
      ++(*issues_)["timestamps raised to keep a location monotone"];
      t = last;
    }
    last = t;
    LocationOut& l = locs_[cur_];
    const uint64_t g = clock_.ToGlobal(t);
    l.first_global = std::min(l.first_global, g);
    l.last_global = std::max(l.last_global, g);
    ++l.events;
    return t;
  }
  OTF2_EvtWriter* W() { return writers_[cur_]; }

  const FunctionInfo* Func(uint16_t f) {
    if (f >= funcs_.size()) {
      ++(*issues_)["records with a function index outside the \"functions\" line skipped"];
      return nullptr;
    }
    return &funcs_[f];
  }
  uint32_t GComm(uint32_t local) {
    uint32_t g = comms_.Global(rank_.rank, local);
    if (g == kNoComm)
      ++(*issues_)["records on a communicator without a \"comm\" line (MPI_COMM_WORLD used)"];
    return g == kNoComm ? 0 : g;
  }
  uint32_t Peer(uint32_t gcomm, int32_t world) {
    uint32_t r = comms_.CommRank(gcomm, world);
    if (r == UINT32_MAX) ++(*issues_)["peers that are not members of the communicator"];
    return r;
  }
  uint32_t Root(const FunctionInfo& f, uint32_t gcomm, int32_t world) {
    if (!f.rooted || world < 0) return OTF2_UNDEFINED_UINT32;
    return Peer(gcomm, world);
  }

  void WriteUnit(const Unit& u) {
    const EventRecord& r = *u.rec;
    switch (r.type) {
      case trace::kCall:
        return WriteCall(u);
      case trace::kCompletion:
        return Complete(r);
      case trace::kSendPart:
      case trace::kRecvPart:
        return WritePart(r);
      case trace::kCancelled:
        return Cancel(r);
      case trace::kCutOff:
        return WriteCutOff(r);
      case trace::kFlush:
      case trace::kInit:
      case trace::kPause: {
        const OTF2_RegionRef reg = r.type == trace::kFlush  ? flush_region_
                                   : r.type == trace::kInit ? init_region_
                                                            : pause_region_;
        Check(OTF2_EvtWriter_Enter(W(), nullptr, T(r.t_enter), reg), "Enter");
        Check(OTF2_EvtWriter_Leave(W(), nullptr, T(r.t_leave), reg), "Leave");
        return;
      }
      case trace::kTestFail: {
        // One record stands for bytes_sent consecutive unsuccessful tests: one region visit,
        // whose Enter carries the count when it is more than one. The visit lasts as long as
        // the calls together and ends at the last one's exit, so the application's work
        // between the polls stays outside MPI, as in the profile (docs/otf2.md).
        if (r.func >= regions_.size()) return (void)Func(r.func);
        uint64_t enter = r.t_enter;
        if (r.bytes_sent > 1 && r.bytes_recv > 0 && r.bytes_recv < r.t_leave - r.t_enter)
          enter = r.t_leave - r.bytes_recv;
        OTF2_AttributeList* attrs = nullptr;
        if (r.bytes_sent > 1) {
          attrs = coalesced_attrs_;
          OTF2_AttributeValue v;
          v.uint64 = r.bytes_sent;
          Check(OTF2_AttributeList_AddAttribute(attrs, kCoalescedAttribute, OTF2_TYPE_UINT64, v),
                "AddAttribute");
        }
        Check(OTF2_EvtWriter_Enter(W(), attrs, T(enter), regions_[r.func]), "Enter");
        if (r.request)
          Check(OTF2_EvtWriter_MpiRequestTest(W(), nullptr, T(enter), r.request), "MpiRequestTest");
        Check(OTF2_EvtWriter_Leave(W(), nullptr, T(r.t_leave), regions_[r.func]), "Leave");
        return;
      }
    }
  }

  void WriteCutOff(const EventRecord& r) {
    const FunctionInfo* f = Func(r.func);
    if (!f) return;
    OTF2_AttributeList* attrs = nullptr;
    if (r.comm != 0xffffffffu) {
      const uint32_t gcomm = GComm(r.comm);
      attrs = coalesced_attrs_;
      OTF2_AttributeValue v;
      if (r.peer >= 0) {
        uint32_t p = comms_.CommRank(gcomm, r.peer);
        v.int32 = p == UINT32_MAX ? -1 : int32_t(p);
        Check(OTF2_AttributeList_AddAttribute(attrs, kPostedSourceAttribute, OTF2_TYPE_INT32, v),
              "AddAttribute");
        v.int32 = r.tag;
        Check(OTF2_AttributeList_AddAttribute(attrs, kPostedTagAttribute, OTF2_TYPE_INT32, v),
              "AddAttribute");
      }
      v.commRef = gcomm;
      Check(OTF2_AttributeList_AddAttribute(attrs, kPostedCommAttribute, OTF2_TYPE_COMM, v),
            "AddAttribute");
    }
    Check(OTF2_EvtWriter_Enter(W(), attrs, T(r.t_enter), regions_[r.func]), "Enter");
    OTF2_AttributeValue one;
    one.uint8 = 1;
    Check(OTF2_AttributeList_AddAttribute(coalesced_attrs_, kCutOffAttribute, OTF2_TYPE_UINT8, one),
          "AddAttribute");
    Check(OTF2_EvtWriter_Leave(W(), coalesced_attrs_, T(r.t_leave), regions_[r.func]), "Leave");
  }

  void WriteCall(const Unit& u) {
    const EventRecord& r = *u.rec;
    const FunctionInfo* f = Func(r.func);
    if (!f) return;
    const OTF2_RegionRef reg = regions_[r.func];
    OTF2_AttributeList* enter_attrs = nullptr;
    if (u.site1) {
      auto it = contexts_.find({rank_.threads[cur_].index, u.site1 - 1});
      if (it == contexts_.end()) {
        ++(*issues_)["calls whose call site is not in the rank's call-site file (no context)"];
      } else {
        OTF2_AttributeValue v;
        v.callingContextRef = it->second;
        Check(OTF2_AttributeList_AddAttribute(coalesced_attrs_, kCallSiteAttribute,
                                              OTF2_TYPE_CALLING_CONTEXT, v),
              "AddAttribute");
        enter_attrs = coalesced_attrs_;
      }
    }
    Check(OTF2_EvtWriter_Enter(W(), enter_attrs, T(r.t_enter), reg), "Enter");
    if (u.counters) WriteCounters(r.t_enter, u.counters->enter, u.counters->count);
    // Only calls that carry a communicator look it up (RMA and I/O records have none).
    uint32_t gcomm_cache = kNoComm;
    auto gcomm = [&] {
      return gcomm_cache != kNoComm ? gcomm_cache : (gcomm_cache = GComm(r.comm));
    };
    WriteCallBegin(u, *f, gcomm);
    WriteNested(u);
    WriteCallEnd(r, *f, gcomm);
    if (u.counters) WriteCounters(r.t_leave, u.counters->leave, u.counters->count);
    Check(OTF2_EvtWriter_Leave(W(), nullptr, T(r.t_leave), reg), "Leave");
  }

  // What a call does at its entry: sends, requests it posts or starts, collective begins,
  // communicators it creates or frees.
  template <typename CommFn>
  void WriteCallBegin(const Unit& u, const FunctionInfo& f, CommFn& gcomm) {
    const EventRecord& r = *u.rec;
    switch (f.op) {
      case Op::kSend:
      case Op::kSendrecv:
        if (r.peer >= 0)
          Check(OTF2_EvtWriter_MpiSend(W(), nullptr, T(r.t_enter), Peer(gcomm(), r.peer), gcomm(),
                                       uint32_t(r.tag), r.bytes_sent),
                "MpiSend");
        break;
      case Op::kIsend:
      case Op::kIrecv:
      case Op::kSendInit:
      case Op::kRecvInit:
        if (r.request) PostRequest(r, f, gcomm());
        break;
      case Op::kStart:
        StartRequests(u);
        break;
      case Op::kCollective:
        Check(OTF2_EvtWriter_MpiCollectiveBegin(W(), nullptr, T(r.t_enter)), "MpiCollectiveBegin");
        break;
      case Op::kNbCollective:
        if (r.request) {
          ReqState s;
          s.kind = ReqState::kColl;
          s.gcomm = gcomm();
          s.root = int32_t(Root(f, gcomm(), r.peer));
          s.sent = r.bytes_sent;
          s.recv = r.bytes_recv;
          s.coll = f.coll;
          reqs_[r.request] = s;
          Check(OTF2_EvtWriter_NonBlockingCollectiveRequest(W(), nullptr, T(r.t_enter), r.request),
                "NonBlockingCollectiveRequest");
        }
        break;
      case Op::kOtherRequest:
        if (r.request) reqs_[r.request] = ReqState{};
        break;
      case Op::kCommNew:
      case Op::kCommFree:
        WriteCommChange(r, f);
        break;
      default:
        break;
    }
  }

  // A nonblocking or persistent point-to-point request; a nonblocking one starts at once.
  void PostRequest(const EventRecord& r, const FunctionInfo& f, uint32_t gcomm) {
    ReqState s;
    const bool send = f.op == Op::kIsend || f.op == Op::kSendInit;
    s.kind = send ? ReqState::kSend : ReqState::kRecv;
    s.persistent =
        f.op == Op::kSendInit || f.op == Op::kRecvInit || (r.flags & trace::kFlagPersistent);
    s.gcomm = gcomm;
    s.peer = r.peer;
    s.tag = r.tag;
    s.bytes = r.bytes_sent;
    s.null_peer = send ? r.peer < 0 : r.peer == -2;
    reqs_[r.request] = s;
    if (!s.persistent) StartRequest(r.request, reqs_[r.request], r.t_enter, 0);
  }

  // MPI_Start/MPI_Startall: the persistent requests it started.
  void StartRequests(const Unit& u) {
    const EventRecord& r = *u.rec;
    for (const auto& [id, bytes] : u.starts)
      if (auto it = reqs_.find(id); it != reqs_.end())
        StartRequest(id, it->second, r.t_enter, bytes);
    if (r.request) {
      auto it = reqs_.find(r.request);
      if (it == reqs_.end())
        ++(*issues_)["MPI_Start of an unknown request"];
      else
        StartRequest(r.request, it->second, r.t_enter, r.bytes_sent);
    }
  }

  // A communicator created or freed: a collective holding its CommCreate/CommDestroy.
  void WriteCommChange(const EventRecord& r, const FunctionInfo& f) {
    const uint32_t g = comms_.Global(rank_.rank, r.comm);
    if (g == kNoComm || g == 0) return;  // MPI_COMM_NULL result, or not described in defs
    Check(OTF2_EvtWriter_MpiCollectiveBegin(W(), nullptr, T(r.t_enter)), "MpiCollectiveBegin");
    if (f.op == Op::kCommNew)
      Check(OTF2_EvtWriter_CommCreate(W(), nullptr, T(r.t_leave), g), "CommCreate");
    else
      Check(OTF2_EvtWriter_CommDestroy(W(), nullptr, T(r.t_leave), g), "CommDestroy");
    Check(OTF2_EvtWriter_MpiCollectiveEnd(W(), nullptr, T(r.t_leave),
                                          f.op == Op::kCommNew ? OTF2_COLLECTIVE_OP_CREATE_HANDLE
                                                               : OTF2_COLLECTIVE_OP_DESTROY_HANDLE,
                                          g, OTF2_UNDEFINED_UINT32, 0, 0),
          "MpiCollectiveEnd");
  }

  // What happened inside the call, in time order: completions, partitioned parts,
  // cancellations, invmw's flushes and start-up.
  void WriteNested(const Unit& u) {
    const EventRecord& r = *u.rec;
    std::vector<const EventRecord*> nested = u.nested;
    std::stable_sort(nested.begin(), nested.end(), [](const EventRecord* a, const EventRecord* b) {
      return a->t_enter < b->t_enter;
    });
    for (const EventRecord* n : nested) {
      if (n->type == trace::kCompletion)
        Complete(*n);
      else if (n->type == trace::kSendPart || n->type == trace::kRecvPart)
        WritePart(*n);
      else if (n->type == trace::kCancelled)
        Cancel(*n);
      else {
        const OTF2_RegionRef reg = n->type == trace::kInit ? init_region_ : flush_region_;
        Check(OTF2_EvtWriter_Enter(W(), nullptr, T(n->t_enter), reg), "Enter");
        Check(OTF2_EvtWriter_Leave(W(), nullptr, T(std::min(n->t_leave, r.t_leave)), reg), "Leave");
      }
    }
  }

  // What a call does at its exit: receives and collective ends.
  template <typename CommFn>
  void WriteCallEnd(const EventRecord& r, const FunctionInfo& f, CommFn& gcomm) {
    switch (f.op) {
      case Op::kRecv:
        if (r.peer >= 0)
          Check(OTF2_EvtWriter_MpiRecv(W(), nullptr, T(r.t_leave), Peer(gcomm(), r.peer), gcomm(),
                                       uint32_t(r.tag), r.bytes_recv),
                "MpiRecv");
        break;
      case Op::kSendrecv:
        if (r.peer2 >= 0)
          Check(OTF2_EvtWriter_MpiRecv(W(), nullptr, T(r.t_leave), Peer(gcomm(), r.peer2), gcomm(),
                                       uint32_t(r.tag2), r.bytes_recv),
                "MpiRecv");
        break;
      case Op::kCollective:
        Check(OTF2_EvtWriter_MpiCollectiveEnd(W(), nullptr, T(r.t_leave), f.coll, gcomm(),
                                              Root(f, gcomm(), r.peer), r.bytes_sent, r.bytes_recv),
              "MpiCollectiveEnd");
        break;
      default:
        break;
    }
  }

  // A synchronous metric: the thread's counters at an Enter or Leave of the same timestamp.
  void WriteCounters(uint64_t t, const uint64_t* v, uint8_t n) {
    OTF2_Type types[3];
    OTF2_MetricValue values[3];
    for (uint8_t i = 0; i < n && i < 3; ++i) {
      types[i] = OTF2_TYPE_DOUBLE;
      values[i].floating_point = double(v[i]);
    }
    Check(OTF2_EvtWriter_Metric(W(), nullptr, T(t), sync_class_, n, types, values), "Metric");
  }

  // A message of a call that moves several (PVM multicast and group calls): a send or receive
  // record on MPI_COMM_WORLD, nested in the call's region, or on its own if no call follows.
  void WritePart(const EventRecord& p) {
    if (p.peer < 0) return;
    const uint32_t world = GComm(0);
    if (p.type == trace::kSendPart)
      Check(OTF2_EvtWriter_MpiSend(W(), nullptr, T(p.t_enter), Peer(world, p.peer), world,
                                   uint32_t(p.tag), p.bytes_sent),
            "MpiSend");
    else
      Check(OTF2_EvtWriter_MpiRecv(W(), nullptr, T(p.t_enter), Peer(world, p.peer), world,
                                   uint32_t(p.tag), p.bytes_recv),
            "MpiRecv");
  }

  void StartRequest(uint64_t id, ReqState& s, uint64_t t, uint64_t start_bytes) {
    s.started = true;
    s.cancelled = false;
    if (s.null_peer) return;
    if (s.kind == ReqState::kSend)
      Check(OTF2_EvtWriter_MpiIsend(W(), nullptr, T(t), Peer(s.gcomm, s.peer), s.gcomm,
                                    uint32_t(s.tag), start_bytes ? start_bytes : s.bytes, id),
            "MpiIsend");
    else if (s.kind == ReqState::kRecv) {
      // A source outside the communicator's group (an intercommunicator's remote group) has
      // no rank to give: such a receive carries no attributes and is left out of matching.
      const uint32_t src = s.peer >= 0 ? Peer(s.gcomm, s.peer) : uint32_t(-1);
      OTF2_AttributeList* attrs = nullptr;
      if (s.peer < 0 || src != UINT32_MAX) {
        attrs = coalesced_attrs_;
        OTF2_AttributeValue v;
        v.int32 = int32_t(src);
        Check(OTF2_AttributeList_AddAttribute(attrs, kPostedSourceAttribute, OTF2_TYPE_INT32, v),
              "AddAttribute");
        v.int32 = s.tag < 0 ? -1 : s.tag;
        Check(OTF2_AttributeList_AddAttribute(attrs, kPostedTagAttribute, OTF2_TYPE_INT32, v),
              "AddAttribute");
        v.commRef = s.gcomm;
        Check(OTF2_AttributeList_AddAttribute(attrs, kPostedCommAttribute, OTF2_TYPE_COMM, v),
              "AddAttribute");
      }
      Check(OTF2_EvtWriter_MpiIrecvRequest(W(), attrs, T(t), id), "MpiIrecvRequest");
    }
  }

  void Complete(const EventRecord& c) {
    auto it = reqs_.find(c.request);
    if (it == reqs_.end()) {
      ++(*issues_)["completions of requests whose start was not recorded"];
      return;
    }
    ReqState& s = it->second;
    if (!s.cancelled) {
      // A persistent request whose start could not be placed starts at its completion.
      if (!s.started) StartRequest(c.request, s, c.t_enter, c.bytes_sent);
      if (s.kind == ReqState::kSend && !s.null_peer) {
        Check(OTF2_EvtWriter_MpiIsendComplete(W(), nullptr, T(c.t_enter), c.request),
              "MpiIsendComplete");
      } else if (s.kind == ReqState::kRecv && !s.null_peer && c.peer != -2) {
        const int32_t src = c.peer >= 0 ? c.peer : s.peer;
        const uint32_t gcomm = s.gcomm;
        Check(
            OTF2_EvtWriter_MpiIrecv(W(), nullptr, T(c.t_enter), Peer(gcomm, src), gcomm,
                                    uint32_t(c.peer >= 0 ? c.tag : s.tag), c.bytes_sent, c.request),
            "MpiIrecv");
      } else if (s.kind == ReqState::kColl) {
        Check(OTF2_EvtWriter_NonBlockingCollectiveComplete(W(), nullptr, T(c.t_enter), s.coll,
                                                           s.gcomm, uint32_t(s.root), s.sent,
                                                           s.recv, c.request),
              "NonBlockingCollectiveComplete");
      }
    }
    if (s.persistent)
      s.started = s.cancelled = false;
    else
      reqs_.erase(it);
  }

  void Cancel(const EventRecord& c) {
    auto it = reqs_.find(c.request);
    if (it == reqs_.end()) {
      ++(*issues_)["cancellations of unknown requests"];
      return;
    }
    // The runtime records a cancellation instead of the completion (in the Wait/Test that
    // completes the request); a completion that still follows is silent.
    ReqState& s = it->second;
    if (!s.started) StartRequest(c.request, s, c.t_enter, c.bytes_sent);
    Check(OTF2_EvtWriter_MpiRequestCancelled(W(), nullptr, T(c.t_enter), c.request),
          "MpiRequestCancelled");
    s.cancelled = true;
    if (s.persistent) s.started = false;
  }

  OTF2_Archive* archive_;
  const RawRank& rank_;
  const CommMap& comms_;
  const std::vector<FunctionInfo>& funcs_;
  const std::vector<OTF2_RegionRef>& regions_;
  OTF2_RegionRef flush_region_, pause_region_, init_region_;
  const ClockModel& clock_;
  std::map<std::string, uint64_t>* issues_;
  OTF2_AttributeList* coalesced_attrs_;  // event attributes; emptied by each write that uses it
  static constexpr uint32_t kNoClass = UINT32_MAX;
  uint32_t sync_class_ = kNoClass;
  std::map<std::pair<int32_t, uint32_t>, uint32_t> contexts_;
  std::vector<OTF2_EvtWriter*> writers_;
  std::vector<uint64_t> last_;
  std::vector<LocationOut> locs_;
  size_t cur_ = 0;
  std::unordered_map<uint64_t, ReqState> reqs_;
};

}  // namespace

// Shared with the parallel writer (conversion.h).
namespace conv {

InvmwRegions DefineInvmwRegions(RegionTable* regions) {
  InvmwRegions r;
  r.flush = regions->Ref("invmw:flush", OTF2_REGION_ROLE_ARTIFICIAL, OTF2_REGION_FLAG_NONE);
  r.pause = regions->Ref("invmw:paused", OTF2_REGION_ROLE_ARTIFICIAL, OTF2_REGION_FLAG_NONE);
  // invmw's start-up inside MPI_Init (the profile's ranks[i].invmw_init_s).
  r.init = regions->Ref("invmw:init", OTF2_REGION_ROLE_ARTIFICIAL, OTF2_REGION_FLAG_NONE);
  return r;
}

// The rank's clock model, and what its defs say about gaps in the trace.
void TakeRankClockAndDrops(const RawRank& rank, Conversion* c) {
  ConvertResult& result = c->result;
  std::string warn;
  c->clocks[rank.rank] = ClockModel::For(rank, &warn);
  if (!warn.empty()) result.problems.push_back(warn);
  if (!rank.has_end || rank.dropped_events || rank.dropped_calls || rank.dropped_requests)
    result.partial = true;
  result.dropped_events += rank.dropped_events;
  result.dropped_calls += rank.dropped_calls;
  result.dropped_requests += rank.dropped_requests;
}

// The rank's MPI events on its thread locations, loaded, written and freed (bounded memory).
void WriteRankEvents(OTF2_Archive* archive, RawRank* rank, Conversion* c) {
  ConvertResult& result = c->result;
  std::vector<FunctionInfo> funcs;
  std::vector<OTF2_RegionRef> refs;
  for (size_t i = 0; i < rank->func_names.size(); ++i) {
    funcs.push_back(
        ClassifyFunction(rank->func_names[i], rank->func_kinds[i], rank->func_classes[i]));
    refs.push_back(c->regions.Ref(rank->func_names[i], funcs.back().role, OTF2_REGION_FLAG_NONE));
  }
  LoadRankEvents(c->run_dir, rank, &result.problems);
  if (rank->threads.empty()) {  // defs but no events at all: still one (empty) location
    rank->threads.push_back({});
    rank->threads.back().name = "main";
  }
  if (rank->damaged) result.partial = true;
  for (const auto& t : rank->threads) result.records_in += t.records.size();
  std::map<std::string, uint64_t> rank_issues;
  const InvmwRegions& inv = c->invmw_regions;
  RankWriter w(archive, *rank, c->comms, funcs, refs, inv.flush, inv.pause, inv.init,
               c->clocks[rank->rank], &rank_issues);
  if (!rank->counter_names.empty()) {
    std::vector<uint32_t> set;
    for (size_t i = 0; i < rank->counter_names.size() && i < 3; ++i)
      set.push_back(c->metric_defs.MemberRef(
          {rank->counter_names[i], i < rank->counter_units.size() ? rank->counter_units[i] : "",
           "counters", "value at MPI call entry and exit", true}));
    w.SetCounterClass(c->metric_defs.ClassRef(set, true));
  }
  RankTraceSites sites;
  std::vector<std::string> reported;  // AddRankContexts reported them
  if (LoadTraceSites(c->run_dir, rank->rank, &sites, &reported)) {
    std::map<std::pair<int32_t, uint32_t>, uint32_t> ctx;
    for (const auto& [key, label] : sites.site_of) ctx[key] = c->contexts.Ref(sites.labels[label]);
    w.SetContexts(std::move(ctx));
  }
  result.events_out += w.Run(&c->locations);
  for (const auto& [what, n] : rank_issues)
    result.problems.push_back("rank " + std::to_string(rank->rank) + ": " + std::to_string(n) +
                              " " + what);
  for (auto& t : rank->threads) {  // bounded memory
    std::vector<EventRecord>().swap(t.records);
    std::vector<uint32_t>().swap(t.site_slots);
  }
}

// The sampler's series of the rank, if it left any, on the rank's metric location.
void WriteRankSamples(OTF2_Archive* archive, const RawRank& rank, Conversion* c) {
  ConvertResult& result = c->result;
  RawSamples samples;
  const size_t problems_before = result.problems.size();
  const bool has_samples = LoadRawSamples(c->run_dir, rank.rank, &samples, &result.problems);
  if (result.problems.size() != problems_before) result.partial = true;  // damaged samples
  if (has_samples) {
    LocationOut ml;
    if (WriteRankMetrics(archive, samples, c->clocks[rank.rank], &c->metric_defs, &ml)) {
      result.events_out += ml.events;
      result.metric_events += ml.events;
      c->locations.push_back(ml);
    }
  }
}

// A rank that left no usable defs still gets an (empty) location, with files, so that
// COMM_LOCATIONS covers the world and readers find a file for every location.
void WriteEmptyLocations(OTF2_Archive* archive, Conversion* c) {
  for (int32_t r = 0; r < c->run.world_size; ++r) {
    if (std::any_of(c->run.ranks.begin(), c->run.ranks.end(),
                    [&](const RawRank& x) { return x.rank == r; }))
      continue;
    c->empty_locations.push_back(LocationId(r, 0));
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, c->empty_locations.back());
    if (!w) throw std::runtime_error("OTF2_Archive_GetEvtWriter failed");
    Check(OTF2_Archive_CloseEvtWriter(archive, w), "CloseEvtWriter");
    c->result.partial = true;
  }
}

// The event files of every location: ranks one at a time, then the empty ones.
void AddRankContexts(const RawRank& rank, Conversion* c) {
  RankTraceSites sites;
  if (LoadTraceSites(c->run_dir, rank.rank, &sites, &c->result.problems))
    for (const std::string& l : sites.labels) c->contexts.Ref(l);
}

void WriteEvents(OTF2_Archive* archive, Conversion* c) {
  // Contexts first, in rank order, as the parallel writer unifies them.
  for (const RawRank& rank : c->run.ranks) AddRankContexts(rank, c);
  Check(OTF2_Archive_OpenEvtFiles(archive), "OpenEvtFiles");
  for (RawRank& rank : c->run.ranks) {
    TakeRankClockAndDrops(rank, c);
    WriteRankEvents(archive, &rank, c);
    WriteRankSamples(archive, rank, c);
    ++c->result.ranks_converted;
  }
  WriteEmptyLocations(archive, c);
  Check(OTF2_Archive_CloseEvtFiles(archive), "CloseEvtFiles");
}

// Local definitions: each location's clock offsets, for readers to correct its timestamps.
void WriteLocalDefs(OTF2_Archive* archive, Conversion* c) {
  Check(OTF2_Archive_OpenDefFiles(archive), "OpenDefFiles");
  WriteLocationDefs(archive, c);
  Check(OTF2_Archive_CloseDefFiles(archive), "CloseDefFiles");
}

void WriteLocationDefs(OTF2_Archive* archive, Conversion* c) {
  for (const LocationOut& l : c->locations) {
    OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive, l.id);
    if (!dw) throw std::runtime_error("OTF2_Archive_GetDefWriter failed");
    const ClockModel& clock = c->clocks[l.rank];
    if (clock.t0 || clock.offset0) {
      Check(OTF2_DefWriter_WriteClockOffset(dw, clock.t0, clock.offset0, clock.stddev0),
            "ClockOffset");
      // The OTF2 reader interpolates between consecutive offsets and ignores a lone one, so
      // a constant offset is written twice.
      if (clock.has_second)
        Check(OTF2_DefWriter_WriteClockOffset(dw, clock.t1, clock.offset1, clock.stddev1),
              "ClockOffset");
      else
        Check(OTF2_DefWriter_WriteClockOffset(dw, clock.t0 + 1, clock.offset0, clock.stddev0),
              "ClockOffset");
    }
    Check(OTF2_Archive_CloseDefWriter(archive, dw), "CloseDefWriter");
  }
  for (uint64_t id : c->empty_locations) {
    OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive, id);
    if (!dw) throw std::runtime_error("OTF2_Archive_GetDefWriter failed");
    Check(OTF2_Archive_CloseDefWriter(archive, dw), "CloseDefWriter");
  }
}

// The span of all events in the reference clock, and the wall-clock time of its start.
void WriteClockProperties(OTF2_GlobalDefWriter* g, Conversion* c) {
  const RawRank& ref = c->run.ranks.front();  // rank 0 when present: the reference clock
  uint64_t first = UINT64_MAX, last = 0;
  for (const auto& l : c->locations)
    if (l.events) {
      first = std::min(first, l.first_global);
      last = std::max(last, l.last_global);
    }
  if (first == UINT64_MAX) first = last = ref.init_ticks;
  uint64_t realtime = OTF2_UNDEFINED_TIMESTAMP;
  if (ref.init_realtime_ns > 0) {
    const double ref_init = double(c->clocks[ref.rank].ToGlobal(ref.init_ticks));
    realtime = uint64_t(double(ref.init_realtime_ns) +
                        (double(first) - ref_init) / ref.ticks_per_second * 1e9);
  }
  Check(OTF2_GlobalDefWriter_WriteClockProperties(g, uint64_t(ref.ticks_per_second + 0.5), first,
                                                  last - first, realtime),
        "ClockProperties");
}

// The string references of the global definitions. OTF2 wants every string defined before the
// definitions that use it, so all are collected (in this fixed order) and written first.
struct GlobalStrings {
  std::vector<std::string> hosts;
  std::map<int32_t, const RawRank*> by_rank;
  OTF2_StringRef empty, machine, node, run;
  std::vector<OTF2_StringRef> hosts_s, regions, groups, locs;
  OTF2_StringRef world_locs;
  std::vector<OTF2_StringRef> comms;
  OTF2_StringRef missing_loc;
  OTF2_StringRef coalesced, coalesced_desc, psrc, psrc_desc, ptag, ptag_desc, pcomm, pcomm_desc,
      cutoff, cutoff_desc, callsite, callsite_desc;
  std::vector<OTF2_StringRef> mname, mdesc, munit;
  std::vector<OTF2_StringRef> ctx_key, ctx_name, ctx_file;  // per calling context
};

GlobalStrings CollectStrings(const Conversion& c, Strings& str) {
  GlobalStrings s;
  for (const auto& r : c.run.ranks) {
    s.by_rank[r.rank] = &r;
    if (std::find(s.hosts.begin(), s.hosts.end(), r.host) == s.hosts.end())
      s.hosts.push_back(r.host);
  }
  s.empty = str("");
  s.machine = str("machine");
  s.node = str("node");
  s.run = str("invmw run");
  for (const auto& h : s.hosts) s.hosts_s.push_back(str(h.empty() ? "unknown host" : h));
  for (const auto& r : c.regions.regions()) s.regions.push_back(str(r.name));
  for (int32_t r = 0; r < c.run.world_size; ++r)
    s.groups.push_back(str("rank " + std::to_string(r) + (s.by_rank.count(r) ? "" : " (missing)")));
  for (const auto& l : c.locations) s.locs.push_back(str(l.name));
  s.world_locs = str("MPI_COMM_WORLD locations");
  for (const auto& cm : c.comms.comms()) s.comms.push_back(str(cm.name));
  s.missing_loc = str("missing rank");
  s.coalesced = str("invmw:coalesced_calls");
  s.coalesced_desc =
      str("number of consecutive unsuccessful test or probe calls this region visit stands for");
  s.psrc = str("invmw:posted_source");
  s.psrc_desc =
      str("source a nonblocking receive was posted for (communicator rank, -1 any source)");
  s.ptag = str("invmw:posted_tag");
  s.ptag_desc = str("tag a nonblocking receive was posted for (-1 any tag)");
  s.pcomm = str("invmw:posted_comm");
  s.pcomm_desc = str("communicator a nonblocking receive was posted on");
  s.cutoff = str("invmw:cut_off");
  s.cutoff_desc =
      str("the call had not returned when the run ended abnormally: this Leave is the end of "
          "the rank's recording, not the call's return");
  if (!c.contexts.labels().empty()) {
    s.callsite = str("invmw:callsite");
    s.callsite_desc = str("where the application made this MPI call (its calling context)");
  }
  for (const auto& l : c.contexts.labels()) {
    s.ctx_key.push_back(str(kContextKeyPrefix + l));
    s.ctx_name.push_back(str.Fresh(l));
    s.ctx_file.push_back(str.Fresh(l));
  }
  for (const auto& m : c.metric_defs.members) {
    s.mname.push_back(str(m.name));
    s.mdesc.push_back(str(m.description));
    s.munit.push_back(str(m.unit));
  }
  return s;
}

void WriteAttributes(OTF2_GlobalDefWriter* g, const GlobalStrings& s) {
  Check(OTF2_GlobalDefWriter_WriteAttribute(g, kCoalescedAttribute, s.coalesced, s.coalesced_desc,
                                            OTF2_TYPE_UINT64),
        "Attribute");
  Check(OTF2_GlobalDefWriter_WriteAttribute(g, kPostedSourceAttribute, s.psrc, s.psrc_desc,
                                            OTF2_TYPE_INT32),
        "Attribute");
  Check(OTF2_GlobalDefWriter_WriteAttribute(g, kPostedTagAttribute, s.ptag, s.ptag_desc,
                                            OTF2_TYPE_INT32),
        "Attribute");
  Check(OTF2_GlobalDefWriter_WriteAttribute(g, kPostedCommAttribute, s.pcomm, s.pcomm_desc,
                                            OTF2_TYPE_COMM),
        "Attribute");
  Check(OTF2_GlobalDefWriter_WriteAttribute(g, kCutOffAttribute, s.cutoff, s.cutoff_desc,
                                            OTF2_TYPE_UINT8),
        "Attribute");
}

// Per call site: a USER region (the application's function; canonical name the key the finish
// step finds it by), a SourceCodeLocation (line 0 until resolved), and the CallingContext the
// Enter events name. Named by object+offset here; the finish step rewrites the strings and lines
// in traces.def only, keeping every reference and the number of definitions (callsite_names.h).
void WriteCallSiteContexts(OTF2_GlobalDefWriter* g, const Conversion& c, const GlobalStrings& s) {
  const size_t nreg = c.regions.regions().size();
  for (size_t i = 0; i < c.contexts.labels().size(); ++i) {
    Check(OTF2_GlobalDefWriter_WriteRegion(g, OTF2_RegionRef(nreg + i), s.ctx_name[i], s.ctx_key[i],
                                           s.empty, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
                                           OTF2_REGION_FLAG_NONE, s.empty, 0, 0),
          "Region");
    Check(OTF2_GlobalDefWriter_WriteSourceCodeLocation(g, OTF2_SourceCodeLocationRef(i),
                                                       s.ctx_file[i], 0),
          "SourceCodeLocation");
    Check(OTF2_GlobalDefWriter_WriteCallingContext(
              g, OTF2_CallingContextRef(i), OTF2_RegionRef(nreg + i), OTF2_SourceCodeLocationRef(i),
              OTF2_UNDEFINED_CALLING_CONTEXT),
          "CallingContext");
  }
}

void WriteRegionsAndMetrics(OTF2_GlobalDefWriter* g, const Conversion& c, const GlobalStrings& s) {
  const std::vector<Region>& regions = c.regions.regions();
  for (size_t i = 0; i < regions.size(); ++i)
    Check(OTF2_GlobalDefWriter_WriteRegion(g, OTF2_RegionRef(i), s.regions[i], s.regions[i],
                                           s.empty, regions[i].role, OTF2_PARADIGM_MPI,
                                           regions[i].flags, s.empty, 0, 0),
          "Region");
  const MetricDefs& metric_defs = c.metric_defs;
  for (size_t i = 0; i < metric_defs.members.size(); ++i) {
    const auto& m = metric_defs.members[i];
    Check(OTF2_GlobalDefWriter_WriteMetricMember(
              g, OTF2_MetricMemberRef(i), s.mname[i], s.mdesc[i],
              m.hardware ? OTF2_METRIC_TYPE_PAPI : OTF2_METRIC_TYPE_OTHER,
              m.accumulated ? OTF2_METRIC_ACCUMULATED_START : OTF2_METRIC_ABSOLUTE_POINT,
              OTF2_TYPE_DOUBLE, OTF2_BASE_DECIMAL, 0, s.munit[i]),
          "MetricMember");
  }
  for (size_t i = 0; i < metric_defs.classes.size(); ++i) {
    const auto& cls = metric_defs.classes[i];
    std::vector<OTF2_MetricMemberRef> refs(cls.begin(), cls.end());
    const bool sync = metric_defs.synchronous[i];
    Check(OTF2_GlobalDefWriter_WriteMetricClass(
              g, OTF2_MetricRef(i), uint8_t(refs.size()), refs.data(),
              sync ? OTF2_METRIC_SYNCHRONOUS : OTF2_METRIC_ASYNCHRONOUS,
              sync ? OTF2_RECORDER_KIND_CPU : OTF2_RECORDER_KIND_ABSTRACT),
          "MetricClass");
  }
}

// The machine, its hosts and one location group (process) per world rank.
void WriteSystemTree(OTF2_GlobalDefWriter* g, const Conversion& c, GlobalStrings& s) {
  Check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, s.run, s.machine,
                                                 OTF2_UNDEFINED_SYSTEM_TREE_NODE),
        "SystemTreeNode");
  for (size_t i = 0; i < s.hosts.size(); ++i)
    Check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, OTF2_SystemTreeNodeRef(i + 1), s.hosts_s[i],
                                                   s.node, 0),
          "SystemTreeNode");
  for (int32_t r = 0; r < c.run.world_size; ++r) {
    OTF2_SystemTreeNodeRef parent = 0;
    if (s.by_rank.count(r))
      parent = OTF2_SystemTreeNodeRef(
          std::find(s.hosts.begin(), s.hosts.end(), s.by_rank[r]->host) - s.hosts.begin() + 1);
    Check(OTF2_GlobalDefWriter_WriteLocationGroup(g, OTF2_LocationGroupRef(r), s.groups[r],
                                                  OTF2_LOCATION_GROUP_TYPE_PROCESS, parent,
                                                  OTF2_UNDEFINED_LOCATION_GROUP),
          "LocationGroup");
  }
}

// The locations and the COMM_LOCATIONS group mapping world ranks to them.
void WriteLocations(OTF2_GlobalDefWriter* g, Conversion* c, const GlobalStrings& s) {
  const int32_t world_size = c->run.world_size;
  // Every world rank needs a location in COMM_LOCATIONS, even one that left no data.
  std::vector<uint64_t> rank_location(world_size, OTF2_UNDEFINED_LOCATION);
  for (size_t i = 0; i < c->locations.size(); ++i) {
    const auto& l = c->locations[i];
    Check(OTF2_GlobalDefWriter_WriteLocation(g, l.id, s.locs[i], l.type, l.events,
                                             OTF2_LocationGroupRef(l.rank)),
          "Location");
    for (uint32_t cls : l.metric_classes)
      Check(OTF2_GlobalDefWriter_WriteMetricClassRecorder(g, cls, l.id), "MetricClassRecorder");
    if (l.type == OTF2_LOCATION_TYPE_CPU_THREAD && l.rank < world_size &&
        rank_location[l.rank] == OTF2_UNDEFINED_LOCATION)
      rank_location[l.rank] = l.id;
  }
  for (int32_t r = 0; r < world_size; ++r)
    if (rank_location[r] == OTF2_UNDEFINED_LOCATION) {
      rank_location[r] = LocationId(r, 0);
      Check(OTF2_GlobalDefWriter_WriteLocation(g, rank_location[r], s.missing_loc,
                                               OTF2_LOCATION_TYPE_CPU_THREAD, 0,
                                               OTF2_LocationGroupRef(r)),
            "Location");
    }
  c->result.locations = c->locations.size();
  Check(OTF2_GlobalDefWriter_WriteGroup(g, 0, s.world_locs, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                        uint32_t(rank_location.size()), rank_location.data()),
        "Group");
}

// Communicators with their groups of world ranks.
void WriteCommunicators(OTF2_GlobalDefWriter* g, const Conversion& c, const GlobalStrings& s) {
  for (const auto& cm : c.comms.comms()) {
    std::vector<uint64_t> members(cm.members.begin(), cm.members.end());
    Check(OTF2_GlobalDefWriter_WriteGroup(
              g, OTF2_GroupRef(cm.id + 1), s.comms[cm.id], OTF2_GROUP_TYPE_COMM_GROUP,
              OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, uint32_t(members.size()), members.data()),
          "Group");
  }
  for (const auto& cm : c.comms.comms())
    Check(OTF2_GlobalDefWriter_WriteComm(
              g, cm.id, s.comms[cm.id], OTF2_GroupRef(cm.id + 1),
              cm.id == 0 ? OTF2_UNDEFINED_COMM : 0,
              cm.id == 0 ? OTF2_COMM_FLAG_NONE : OTF2_COMM_FLAG_CREATE_DESTROY_EVENTS),
          "Comm");
}

// Global definitions: everything the events refer to.
void WriteGlobalDefs(OTF2_Archive* archive, Conversion* c) {
  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive);
  if (!g) throw std::runtime_error("OTF2_Archive_GetGlobalDefWriter failed");
  WriteClockProperties(g, c);
  Strings str;
  GlobalStrings s = CollectStrings(*c, str);
  str.Write(g);
  WriteAttributes(g, s);
  if (!c->contexts.labels().empty())
    Check(OTF2_GlobalDefWriter_WriteAttribute(g, kCallSiteAttribute, s.callsite, s.callsite_desc,
                                              OTF2_TYPE_CALLING_CONTEXT),
          "Attribute");
  WriteRegionsAndMetrics(g, *c, s);
  WriteCallSiteContexts(g, *c, s);
  WriteSystemTree(g, *c, s);
  WriteLocations(g, c, s);
  WriteCommunicators(g, *c, s);
}

// The archive's INVMW::* properties: what readers need to know about gaps and companions.
void WriteProperties(OTF2_Archive* archive, const std::string& run_dir,
                     const ConvertResult& result) {
  Check(
      OTF2_Archive_SetProperty(archive, "INVMW::PARTIAL", result.partial ? "true" : "false", true),
      "SetProperty");
  // Readers need the size of the gap, not only that there is one: records dropped by full rings
  // (INVMW_TRACE_ON_FULL=stop), summed over ranks.
  Check(OTF2_Archive_SetProperty(archive, "INVMW::DROPPED_EVENTS",
                                 std::to_string(result.dropped_events).c_str(), true),
        "SetProperty");
  // Calls never recorded at all (threads beyond INVMW_WRAP_MAX_THREADS) and requests whose
  // completion is missing (beyond INVMW_WRAP_MAX_REQUESTS): gaps the rings know nothing of.
  Check(OTF2_Archive_SetProperty(archive, "INVMW::DROPPED_CALLS",
                                 std::to_string(result.dropped_calls).c_str(), true),
        "SetProperty");
  Check(OTF2_Archive_SetProperty(archive, "INVMW::DROPPED_REQUESTS",
                                 std::to_string(result.dropped_requests).c_str(), true),
        "SetProperty");
  // Worlds started by MPI_Comm_spawn keep their own trace in RUN/spawned-*/ (README.md).
  std::vector<std::string> spawned_dirs;
  std::error_code spawn_ec;
  for (const auto& e : std::filesystem::directory_iterator(run_dir, spawn_ec))
    if (e.path().filename().string().rfind("spawned-", 0) == 0)
      spawned_dirs.push_back(e.path().filename().string());
  std::sort(spawned_dirs.begin(), spawned_dirs.end());
  std::string spawned;
  for (const auto& d : spawned_dirs) spawned += (spawned.empty() ? "" : ",") + d;
  if (!spawned.empty())
    Check(OTF2_Archive_SetProperty(archive, "INVMW::SPAWNED", spawned.c_str(), true),
          "SetProperty");
  Check(OTF2_Archive_SetProperty(archive, "INVMW::PROBLEMS",
                                 std::to_string(result.problems.size()).c_str(), true),
        "SetProperty");
}

// The conversion proper, writing the archive under the name write_name (ConvertToOtf2 renames
// it into place).
ConvertResult WriteArchive(const std::string& run_dir, const ConvertOptions& options,
                           const std::string& write_name) {
  Conversion c;
  c.run_dir = run_dir;
  LoadOptions lo;
  lo.events = false;
  c.run = LoadRawRun(run_dir, lo);
  c.result.world_size = c.run.world_size;
  c.result.problems = c.run.problems;
  c.comms.Build(c.run, &c.result.problems);
  c.invmw_regions = DefineInvmwRegions(&c.regions);

  OTF2_Archive* archive = OpenArchiveForWriting(run_dir, write_name, options.chunk_size_events,
                                                options.chunk_size_defs);
  struct Closer {
    OTF2_Archive* a;
    ~Closer() {
      if (a) OTF2_Archive_Close(a);
    }
  } closer{archive};
  Check(OTF2_Archive_SetCreator(archive, "invmw trace convert"), "SetCreator");
  Check(OTF2_Archive_SetDescription(archive, "MPI trace recorded by invmw (LD_PRELOAD)"),
        "SetDescription");
  WriteEvents(archive, &c);
  WriteLocalDefs(archive, &c);
  WriteGlobalDefs(archive, &c);
  WriteProperties(archive, run_dir, c.result);
  closer.a = nullptr;
  Check(OTF2_Archive_Close(archive), "Archive_Close");
  return c.result;
}

}  // namespace conv

ConvertResult ConvertToOtf2(const std::string& run_dir, const ConvertOptions& options) {
  std::string error;
  if (!options.IsValid(&error)) throw std::invalid_argument(error);
  const std::string archive = run_dir + "/" + options.archive_name + ".otf2";
  const bool existed = ArchiveExists(run_dir, options.archive_name);
  if (existed && !options.overwrite)
    throw std::runtime_error(archive + ": archive exists (overwrite is off)");
  // Written beside the archive it replaces, renamed over it only once complete: a failure
  // (full disk, RLIMIT_FSIZE, out of memory) leaves the previous archive as it was.
  IgnoreSigxfsz sigxfsz;
  TempArchive temp(run_dir, options.archive_name);
  ConvertResult result;
  try {
    result = conv::WriteArchive(run_dir, options, temp.name());
    if (const std::string w = temp.Replace(); !w.empty()) result.problems.push_back(w);
  } catch (const std::exception& e) {
    const std::string otf2 = TakeOtf2Error();
    throw std::runtime_error(archive + ": not written: " + e.what() +
                             (otf2.empty() ? "" : "; OTF2: " + otf2) +
                             (existed ? "; the previous archive is unchanged" : ""));
  }
  result.archive = archive;
  return result;
}

}  // namespace invmw::otf2
