#include "otf2_reader/trace_reader.h"

#include <otf2/otf2.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <sys/mman.h>
#include <unistd.h>

#include <ctime>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "otf2_writer/otf2_open.h"

namespace invmw::otf2 {

const char* EventTypeName(TraceEvent::Type t) {
  static const char* const names[] = {"Enter",
                                      "Leave",
                                      "MpiSend",
                                      "MpiIsend",
                                      "MpiIsendComplete",
                                      "MpiIrecvRequest",
                                      "MpiRecv",
                                      "MpiIrecv",
                                      "MpiRequestTest",
                                      "MpiRequestCancelled",
                                      "MpiCollectiveBegin",
                                      "MpiCollectiveEnd",
                                      "NonBlockingCollectiveRequest",
                                      "NonBlockingCollectiveComplete",
                                      "CommCreate",
                                      "CommDestroy",
                                      "Other"};
  return t < TraceEvent::kNumTypes ? names[t] : "?";
}

namespace {

struct Group {
  OTF2_GroupType type;
  std::vector<uint64_t> members;
};

// The matching lists hold one record per send and receive of the whole trace until the messages
// are matched (most of a streaming first pass's memory), so they are kept small: a location and
// event index packed into one word (Where), no fields matching does not use.
constexpr unsigned kEventBits = 40;  // events per location below 2^40, locations below 2^24
uint64_t Where(size_t loc, size_t event) {
  if (loc >= (size_t(1) << (64 - kEventBits)) || event >= (uint64_t(1) << kEventBits))
    throw std::runtime_error("trace too large for message matching: location " +
                             std::to_string(loc) + " event " + std::to_string(event) +
                             " (at most 2^24 locations and 2^40 events per location)");
  return (uint64_t(loc) << kEventBits) | uint64_t(event);
}
size_t WhereLoc(uint64_t w) {
  return size_t(w >> kEventBits);
}
size_t WhereEvent(uint64_t w) {
  return size_t(w & ((uint64_t(1) << kEventBits) - 1));
}

struct PendingSend {
  uint32_t comm;
  int32_t src, dst;
  uint32_t tag;
  double time;
  uint64_t bytes;
  uint64_t where;  // Where(location, event): orders as (location, event)
};
static_assert(sizeof(PendingSend) == 40, "PendingSend is held per send of the trace");
struct PendingRecv {
  uint32_t comm;
  int32_t src, dst;
  uint32_t tag;
  double post, time;
  uint64_t bytes;
  uint64_t where;
  uint32_t uncompleted = UINT32_MAX;  // index into Trace::uncompleted_recvs, else a completed one
};
static_assert(sizeof(PendingRecv) == 56, "PendingRecv is held per receive of the trace");
// A list grown in chunks of 2^16 records (2.5-3.5 MiB): no doubling slack nor copy as it
// grows, and given back chunk by chunk when taken. std::deque's 512-byte blocks of the sends
// and of the receives lay interleaved in the heap, so emptying one list left no whole page to
// give back, and moving the lists into vectors to sort them held them twice (1.87 GiB peak at
// 10^8 events with 1 thread).
template <typename T>
class ChunkedList {
 public:
  void push_back(const T& x) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);
    }
    chunks_.back().push_back(x);
    ++size_;
  }
  size_t size() const { return size_; }
  // f(record) for every record in the order pushed.
  template <typename F>
  void ForEach(F f) const {
    for (const auto& c : chunks_)
      for (const T& x : c) f(x);
  }
  // Every record into out (size() records), the i-th pushed at out[slot(i)]; the chunks are
  // freed as they are copied, as by Take.
  template <typename Slot>
  void MoveInto(std::vector<T>& out, Slot slot) {
    size_t i = 0;
    Drain([&](const std::vector<T>& c) {
      for (const T& x : c) out[slot(i++)] = x;
    });
  }
  // Every record in one vector; the chunks are freed (and their pages given back) as they are
  // copied, so the list is held about once.
  std::vector<T> Take() {
    std::vector<T> v;
    v.reserve(size_);
    Drain([&](const std::vector<T>& c) { v.insert(v.end(), c.begin(), c.end()); });
    return v;
  }

 private:
  // Hands each chunk to consume, then frees it.
  template <typename F>
  void Drain(F consume) {
    for (size_t k = 0; k < chunks_.size(); ++k) {
      consume(chunks_[k]);
      std::vector<T>().swap(chunks_[k]);
#ifdef __GLIBC__
      // Chunks that came from the heap are resident until trimmed.
      if (k % 32 == 31) malloc_trim(0);
#endif
    }
    std::vector<std::vector<T>>().swap(chunks_);
    size_ = 0;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
  }

  static constexpr size_t kChunk = size_t(1) << 16;
  std::vector<std::vector<T>> chunks_;
  size_t size_ = 0;
};

// A nonblocking receive posted with invmw's attributes, until its completion or cancellation.
struct PostedRecv {
  UncompletedRecv u;
  size_t seq;
};

struct State {
  Trace* t;
  std::unordered_map<uint32_t, std::string> strings;
  std::unordered_map<uint64_t, uint32_t> group_of_location;  // location -> location group
  std::unordered_map<uint64_t, size_t> metric_loc_index;
  std::map<uint32_t, Group> groups;
  std::map<uint32_t, uint32_t> comm_group;
  std::unordered_map<uint64_t, size_t> loc_index;
  std::vector<std::vector<double>> open_enters;              // per location: stack of Enter times
  std::map<std::pair<size_t, uint64_t>, double> irecv_post;  // (location, request)
  std::map<std::pair<int32_t, uint64_t>, double> irecv_post_rank;
  std::map<std::pair<int32_t, uint64_t>, PostedRecv> posted;  // (rank, request)
  // invmw's attributes on MpiIrecvRequest, found by name (another writer may number them
  // differently, or not define them).
  OTF2_AttributeRef attr_source = OTF2_UNDEFINED_ATTRIBUTE;
  OTF2_AttributeRef attr_tag = OTF2_UNDEFINED_ATTRIBUTE;
  OTF2_AttributeRef attr_comm = OTF2_UNDEFINED_ATTRIBUTE;
  OTF2_AttributeRef attr_coalesced = OTF2_UNDEFINED_ATTRIBUTE;
  OTF2_AttributeRef attr_cut_off = OTF2_UNDEFINED_ATTRIBUTE;
  OTF2_AttributeRef attr_callsite = OTF2_UNDEFINED_ATTRIBUTE;
  std::unordered_map<uint32_t, std::pair<std::string, uint32_t>> scls;  // file, line
  ChunkedList<PendingSend> sends;
  ChunkedList<PendingRecv> recvs;
  std::vector<PostedRecv> posted_more;  // the other reader threads' open receives
  size_t seq = 0;
  std::string error;
  // Streaming (keep_events false): each location's latest event, given to `sink` (if any) when
  // the location's next event arrives or reading ends; `match` false skips the matching lists.
  bool keep_events = true;
  bool match = true;
  bool sort_messages = true;  // ReadOptions::sort_messages
  const std::function<void(size_t, const TraceEvent&)>* sink = nullptr;
  std::vector<TraceEvent> current;
  std::vector<char> pending;
  std::vector<std::vector<char>> entered;  // per location: region refs entered
  // StreamTrace: events given to `stream` in the order the OTF2 reader merges them (time order
  // across the locations), each once complete: the latest is held until the next one (or a
  // metric) arrives. `held_post`: the MpiIrecvRequest's posted attributes, when it has them.
  const StreamOptions* stream = nullptr;
  size_t held = SIZE_MAX;
  uint64_t held_index = 0;
  bool held_posted = false;
  UncompletedRecv held_post;

  std::string Str(uint32_t ref) const {
    auto it = strings.find(ref);
    return it == strings.end() ? "" : it->second;
  }
  int32_t World(uint32_t comm, uint32_t rank) const {
    auto it = t->comms.find(comm);
    if (it == t->comms.end() || rank >= it->second.members.size()) return -1;
    return it->second.members[rank];
  }
  // loc_index's entries for small location references, in an array: every event looks its
  // location up, and the hash lookup was a twentieth of the reading's time. Filled on first use
  // (loc_index does not change once events are read).
  std::vector<size_t> dense_index;
  size_t LocIndex(OTF2_LocationRef loc) {
    if (loc < dense_index.size() && dense_index[loc] != SIZE_MAX) return dense_index[loc];
    const size_t li = loc_index.at(loc);
    if (loc < (uint64_t(1) << 16)) {
      if (loc >= dense_index.size()) dense_index.resize(size_t(loc) + 1, SIZE_MAX);
      dense_index[loc] = li;
    }
    return li;
  }
  TraceEvent& Add(OTF2_LocationRef loc, OTF2_TimeStamp time, TraceEvent::Type type, size_t* li) {
    *li = LocIndex(loc);
    TraceLocation& l = t->locations[*li];
    TraceEvent e;
    e.type = type;
    e.ticks = time;
    e.time = double(int64_t(time - t->global_offset)) / double(t->timer_resolution);
    if (l.event_count == 0) l.first_time = e.time;
    l.last_time = e.time;
    ++l.event_count;
    ++seq;
    if (keep_events) {
      l.events.push_back(e);
      return l.events.back();
    }
    if (stream) {
      Deliver();
      held = *li;
      held_index = l.event_count - 1;
      held_posted = false;
      current[*li] = e;
      return current[*li];
    }
    if (pending[*li] && sink) (*sink)(*li, current[*li]);
    pending[*li] = 1;
    current[*li] = e;
    return current[*li];
  }
  void Deliver() {
    if (held == SIZE_MAX) return;
    if (stream->event)
      stream->event(held, held_index, current[held], held_posted ? &held_post : nullptr);
    held = SIZE_MAX;
  }
  void Flush() {
    if (stream) Deliver();
    for (size_t li = 0; li < pending.size(); ++li)
      if (pending[li] && sink) (*sink)(li, current[li]);
    std::fill(pending.begin(), pending.end(), 0);
  }
  size_t Index(size_t li) const { return size_t(t->locations[li].event_count - 1); }
};

State* S(void* p) {
  return static_cast<State*>(p);
}

// --- global definitions ---
OTF2_CallbackCode DefClock(void* u, uint64_t res, uint64_t off, uint64_t len, uint64_t rt) {
  S(u)->t->timer_resolution = res;
  S(u)->t->global_offset = off;
  S(u)->t->trace_length = len;
  S(u)->t->realtime_ns = rt;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefString(void* u, OTF2_StringRef self, const char* s) {
  S(u)->strings[self] = s;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefRegion(void* u, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef,
                            OTF2_StringRef, OTF2_RegionRole role, OTF2_Paradigm paradigm,
                            OTF2_RegionFlag, OTF2_StringRef, uint32_t, uint32_t) {
  auto& regions = S(u)->t->regions;
  if (regions.size() <= self) regions.resize(self + 1);
  regions[self] = {S(u)->Str(name), int(role), int(paradigm)};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefLocation(void* u, OTF2_LocationRef self, OTF2_StringRef name,
                              OTF2_LocationType type, uint64_t events,
                              OTF2_LocationGroupRef group) {
  if (type == OTF2_LOCATION_TYPE_METRIC) {
    TraceMetricLocation m;
    m.id = self;
    m.name = S(u)->Str(name);
    m.declared_events = events;
    m.rank = int32_t(group);
    S(u)->group_of_location[self] = group;
    S(u)->t->metric_locations.push_back(std::move(m));
    return OTF2_CALLBACK_SUCCESS;
  }
  TraceLocation l;
  l.id = self;
  l.name = S(u)->Str(name);
  l.declared_events = events;
  l.rank = int32_t(group);  // refined from COMM_LOCATIONS once all definitions are read
  S(u)->group_of_location[self] = group;
  S(u)->t->locations.push_back(std::move(l));
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefGroup(void* u, OTF2_GroupRef self, OTF2_StringRef, OTF2_GroupType type,
                           OTF2_Paradigm, OTF2_GroupFlag, uint32_t n, const uint64_t* members) {
  S(u)->groups[self] = {type, std::vector<uint64_t>(members, members + n)};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefAttribute(void* u, OTF2_AttributeRef self, OTF2_StringRef name, OTF2_StringRef,
                               OTF2_Type type) {
  const std::string n = S(u)->Str(name);
  if (n == "invmw:posted_source" && type == OTF2_TYPE_INT32) S(u)->attr_source = self;
  if (n == "invmw:posted_tag" && type == OTF2_TYPE_INT32) S(u)->attr_tag = self;
  if (n == "invmw:posted_comm" && type == OTF2_TYPE_COMM) S(u)->attr_comm = self;
  if (n == "invmw:coalesced_calls" && type == OTF2_TYPE_UINT64) S(u)->attr_coalesced = self;
  if (n == "invmw:cut_off" && type == OTF2_TYPE_UINT8) S(u)->attr_cut_off = self;
  if (n == "invmw:callsite" && type == OTF2_TYPE_CALLING_CONTEXT) S(u)->attr_callsite = self;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefSourceCodeLocation(void* u, OTF2_SourceCodeLocationRef self,
                                        OTF2_StringRef file, uint32_t line) {
  S(u)->scls[self] = {S(u)->Str(file), line};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefCallingContext(void* u, OTF2_CallingContextRef self, OTF2_RegionRef region,
                                    OTF2_SourceCodeLocationRef scl, OTF2_CallingContextRef) {
  auto& c = S(u)->t->callsites;
  if (self >= (1u << 24)) return OTF2_CALLBACK_SUCCESS;  // not invmw's dense numbering
  if (c.size() <= self) c.resize(self + 1);
  const auto& regions = S(u)->t->regions;
  c[self].function = region < regions.size() ? regions[region].name : "";
  // Line 0: a location not resolved (yet): its file string is the object+offset label.
  auto it = S(u)->scls.find(scl);
  if (it != S(u)->scls.end() && it->second.second > 0) {
    c[self].file = it->second.first;
    c[self].line = it->second.second;
  }
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefComm(void* u, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group,
                          OTF2_CommRef, OTF2_CommFlag) {
  S(u)->t->comms[self].name = S(u)->Str(name);
  S(u)->comm_group[self] = group;
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode DefMetricMember(void* u, OTF2_MetricMemberRef self, OTF2_StringRef name,
                                  OTF2_StringRef, OTF2_MetricType, OTF2_MetricMode mode, OTF2_Type,
                                  OTF2_Base, int64_t, OTF2_StringRef unit) {
  auto& m = S(u)->t->metric_members;
  if (m.size() <= self) m.resize(self + 1);
  m[self] = {S(u)->Str(name), S(u)->Str(unit),
             (mode & OTF2_METRIC_VALUE_MASK) == OTF2_METRIC_VALUE_ACCUMULATED};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode DefMetricClass(void* u, OTF2_MetricRef self, uint8_t n,
                                 const OTF2_MetricMemberRef* members, OTF2_MetricOccurrence,
                                 OTF2_RecorderKind) {
  S(u)->t->metric_classes[self] = std::vector<uint32_t>(members, members + n);
  return OTF2_CALLBACK_SUCCESS;
}

// --- events ---
#define INVMW_EVT_HEAD OTF2_LocationRef loc, OTF2_TimeStamp time, void *u, OTF2_AttributeList *attrs

OTF2_CallbackCode EvEnter(INVMW_EVT_HEAD, OTF2_RegionRef region) {
  size_t li;
  TraceEvent& e = S(u)->Add(loc, time, TraceEvent::kEnter, &li);
  e.region = region;
  if (region < S(u)->t->regions.size()) {
    auto& seen = S(u)->entered[li];
    if (seen.empty()) seen.resize(S(u)->t->regions.size(), 0);
    seen[region] = 1;
  }
  uint64_t calls = 0;
  if (attrs && S(u)->attr_coalesced != OTF2_UNDEFINED_ATTRIBUTE &&
      OTF2_AttributeList_GetUint64(attrs, S(u)->attr_coalesced, &calls) == OTF2_SUCCESS &&
      calls > 1)
    e.calls = uint32_t(std::min<uint64_t>(calls, UINT32_MAX));
  OTF2_CallingContextRef ctx;
  if (attrs && S(u)->attr_callsite != OTF2_UNDEFINED_ATTRIBUTE &&
      OTF2_AttributeList_GetCallingContextRef(attrs, S(u)->attr_callsite, &ctx) == OTF2_SUCCESS &&
      ctx < S(u)->t->callsites.size())
    e.callsite = ctx;
  S(u)->open_enters[li].push_back(e.time);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvLeave(INVMW_EVT_HEAD, OTF2_RegionRef region) {
  size_t li;
  TraceEvent& e = S(u)->Add(loc, time, TraceEvent::kLeave, &li);
  e.region = region;
  uint8_t cut = 0;
  if (attrs && S(u)->attr_cut_off != OTF2_UNDEFINED_ATTRIBUTE &&
      OTF2_AttributeList_GetUint8(attrs, S(u)->attr_cut_off, &cut) == OTF2_SUCCESS && cut)
    e.cut_off = true;
  if (!S(u)->open_enters[li].empty()) S(u)->open_enters[li].pop_back();
  return OTF2_CALLBACK_SUCCESS;
}
void P2p(State* s, size_t li, TraceEvent& e, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
         uint64_t len) {
  e.comm = comm;
  e.peer = s->World(comm, peer);
  e.tag = tag;
  e.bytes = len;
}
void NoteSend(State* s, size_t li, const TraceEvent& e) {
  if (!s->match) return;
  s->sends.push_back(
      {e.comm, s->t->locations[li].rank, e.peer, e.tag, e.time, e.bytes, Where(li, s->Index(li))});
}
void NoteRecv(State* s, size_t li, const TraceEvent& e, double post) {
  if (!s->match) return;
  s->recvs.push_back({e.comm, e.peer, s->t->locations[li].rank, e.tag, post, e.time, e.bytes,
                      Where(li, s->Index(li))});
}
OTF2_CallbackCode EvSend(INVMW_EVT_HEAD, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
                         uint64_t len) {
  size_t li;
  TraceEvent& e = S(u)->Add(loc, time, TraceEvent::kMpiSend, &li);
  P2p(S(u), li, e, peer, comm, tag, len);
  NoteSend(S(u), li, e);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvIsend(INVMW_EVT_HEAD, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
                          uint64_t len, uint64_t req) {
  size_t li;
  TraceEvent& e = S(u)->Add(loc, time, TraceEvent::kMpiIsend, &li);
  P2p(S(u), li, e, peer, comm, tag, len);
  e.request = req;
  NoteSend(S(u), li, e);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvRecv(INVMW_EVT_HEAD, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
                         uint64_t len) {
  size_t li;
  TraceEvent& e = S(u)->Add(loc, time, TraceEvent::kMpiRecv, &li);
  P2p(S(u), li, e, peer, comm, tag, len);
  const auto& open = S(u)->open_enters[li];
  NoteRecv(S(u), li, e, open.empty() ? e.time : open.back());
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvIrecvRequest(INVMW_EVT_HEAD, uint64_t req) {
  size_t li;
  TraceEvent& e = S(u)->Add(loc, time, TraceEvent::kMpiIrecvRequest, &li);
  e.request = req;
  State* s = S(u);
  const int32_t rank = s->t->locations[li].rank;
  if (s->match) {  // only matching looks them up; a stream would keep one per receive
    s->irecv_post[{li, req}] = e.time;
    s->irecv_post_rank[{rank, req}] = e.time;
  }
  int32_t src = 0, tag = 0;
  OTF2_CommRef comm = OTF2_UNDEFINED_COMM;
  if (attrs && s->attr_source != OTF2_UNDEFINED_ATTRIBUTE &&
      s->attr_tag != OTF2_UNDEFINED_ATTRIBUTE && s->attr_comm != OTF2_UNDEFINED_ATTRIBUTE &&
      OTF2_AttributeList_GetInt32(attrs, s->attr_source, &src) == OTF2_SUCCESS &&
      OTF2_AttributeList_GetInt32(attrs, s->attr_tag, &tag) == OTF2_SUCCESS &&
      OTF2_AttributeList_GetCommRef(attrs, s->attr_comm, &comm) == OTF2_SUCCESS &&
      (s->match || s->stream)) {
    PostedRecv p;
    p.u.loc = li;
    p.u.event = s->Index(li);
    p.u.rank = rank;
    p.u.comm = comm;
    p.u.peer = src < 0 ? -1 : s->World(comm, uint32_t(src));
    p.u.tag = tag < 0 ? -1 : tag;
    p.u.post_time = e.time;
    p.u.wildcard = src < 0 || tag < 0 || p.u.peer < 0;
    p.seq = s->seq;
    if (s->stream) {
      s->held_posted = true;
      s->held_post = p.u;
    } else {
      s->posted[{rank, req}] = p;  // a persistent request's new start replaces its last one
    }
  }
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvIrecv(INVMW_EVT_HEAD, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
                          uint64_t len, uint64_t req) {
  State* s = S(u);
  size_t li;
  TraceEvent& e = s->Add(loc, time, TraceEvent::kMpiIrecv, &li);
  P2p(s, li, e, peer, comm, tag, len);
  e.request = req;
  double post = e.time;
  if (auto it = s->irecv_post.find({li, req}); it != s->irecv_post.end()) {
    post = it->second;
    s->irecv_post.erase(it);
  } else if (auto jt = s->irecv_post_rank.find({s->t->locations[li].rank, req});
             jt != s->irecv_post_rank.end()) {
    post = jt->second;  // posted by another thread of the same process
  }
  s->posted.erase({s->t->locations[li].rank, req});
  NoteRecv(s, li, e, post);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvReqOnly(State* s, OTF2_LocationRef loc, OTF2_TimeStamp time,
                            TraceEvent::Type type, uint64_t req) {
  size_t li;
  s->Add(loc, time, type, &li).request = req;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvIsendComplete(INVMW_EVT_HEAD, uint64_t req) {
  return EvReqOnly(S(u), loc, time, TraceEvent::kMpiIsendComplete, req);
}
OTF2_CallbackCode EvTest(INVMW_EVT_HEAD, uint64_t req) {
  return EvReqOnly(S(u), loc, time, TraceEvent::kMpiRequestTest, req);
}
OTF2_CallbackCode EvCancel(INVMW_EVT_HEAD, uint64_t req) {
  const OTF2_CallbackCode rc = EvReqOnly(S(u), loc, time, TraceEvent::kMpiRequestCancelled, req);
  // A cancelled receive matched nothing.
  S(u)->posted.erase({S(u)->t->locations[S(u)->loc_index.at(loc)].rank, req});
  return rc;
}
OTF2_CallbackCode EvNbcRequest(INVMW_EVT_HEAD, uint64_t req) {
  return EvReqOnly(S(u), loc, time, TraceEvent::kNonBlockingCollectiveRequest, req);
}
OTF2_CallbackCode EvCollBegin(INVMW_EVT_HEAD) {
  size_t li;
  S(u)->Add(loc, time, TraceEvent::kMpiCollectiveBegin, &li);
  return OTF2_CALLBACK_SUCCESS;
}
void Coll(State* s, TraceEvent& e, OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root,
          uint64_t sent, uint64_t recv) {
  e.coll_op = op;
  e.comm = comm;
  e.peer = root == OTF2_UNDEFINED_UINT32 ? -1 : s->World(comm, root);
  e.bytes = sent;
  e.bytes_recv = recv;
}
OTF2_CallbackCode EvCollEnd(INVMW_EVT_HEAD, OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root,
                            uint64_t sent, uint64_t recv) {
  size_t li;
  Coll(S(u), S(u)->Add(loc, time, TraceEvent::kMpiCollectiveEnd, &li), op, comm, root, sent, recv);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvNbcComplete(INVMW_EVT_HEAD, OTF2_CollectiveOp op, OTF2_CommRef comm,
                                uint32_t root, uint64_t sent, uint64_t recv, uint64_t req) {
  size_t li;
  TraceEvent& e = S(u)->Add(loc, time, TraceEvent::kNonBlockingCollectiveComplete, &li);
  Coll(S(u), e, op, comm, root, sent, recv);
  e.request = req;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvCommCreate(INVMW_EVT_HEAD, OTF2_CommRef comm) {
  size_t li;
  S(u)->Add(loc, time, TraceEvent::kCommCreate, &li).comm = comm;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvCommDestroy(INVMW_EVT_HEAD, OTF2_CommRef comm) {
  size_t li;
  S(u)->Add(loc, time, TraceEvent::kCommDestroy, &li).comm = comm;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvUnknown(INVMW_EVT_HEAD) {
  size_t li;
  S(u)->Add(loc, time, TraceEvent::kOther, &li);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode EvMetric(INVMW_EVT_HEAD, OTF2_MetricRef metric, uint8_t n, const OTF2_Type* types,
                           const OTF2_MetricValue* values) {
  State* st = S(u);
  auto it = st->metric_loc_index.find(loc);
  auto thread = st->loc_index.find(loc);
  if (it == st->metric_loc_index.end() && thread == st->loc_index.end())
    return OTF2_CALLBACK_SUCCESS;
  TraceMetricSample m;
  m.ticks = time;
  m.time = double(int64_t(time - st->t->global_offset)) / double(st->t->timer_resolution);
  m.metric_class = metric;
  for (uint8_t i = 0; i < n; ++i)
    m.values.push_back(types[i] == OTF2_TYPE_DOUBLE  ? values[i].floating_point
                       : types[i] == OTF2_TYPE_INT64 ? double(values[i].signed_int)
                                                     : double(values[i].unsigned_int));
  if (st->stream) {
    st->Deliver();  // keeps the time order between events and metrics
    const bool on_metric_location = it != st->metric_loc_index.end();
    if (st->stream->metric)
      st->stream->metric(on_metric_location, on_metric_location ? it->second : thread->second, m);
  } else if (it != st->metric_loc_index.end())
    st->t->metric_locations[it->second].samples.push_back(std::move(m));
  else  // synchronous: counters at an MPI call's entry or exit, on the calling thread
    st->t->locations[thread->second].metrics.push_back(std::move(m));
  return OTF2_CALLBACK_SUCCESS;
}
#undef INVMW_EVT_HEAD

void Check(OTF2_ErrorCode rc, const std::string& path, const char* step) {
  if (rc != OTF2_SUCCESS) {
    const std::string cause = TakeOtf2Error();
    throw std::runtime_error(path + ": cannot read OTF2 archive (" + step + ": " +
                             OTF2_Error_GetName(rc) + ", " + OTF2_Error_GetDescription(rc) + ")" +
                             (cause.empty() ? "" : "; OTF2: " + cause));
  }
}

// The matching order: by channel, then in MPI's order (sends by start, receives by post; ties
// by location and event, not by the order in which a reader thread met them, so that the result
// does not depend on how locations were split over threads). `where` is unique per list, so
// the order is total: sorting parts apart and merging them gives what one sort gives.
// Function objects, not functions: std::sort inlines them (through a function pointer each
// comparison was a call).
struct SendLessT {
  bool operator()(const PendingSend& a, const PendingSend& b) const {
    return std::tie(a.comm, a.src, a.dst, a.tag, a.time, a.where) <
           std::tie(b.comm, b.src, b.dst, b.tag, b.time, b.where);
  }
};
struct RecvLessT {
  bool operator()(const PendingRecv& a, const PendingRecv& b) const {
    return std::tie(a.comm, a.src, a.dst, a.tag, a.post, a.where) <
           std::tie(b.comm, b.src, b.dst, b.tag, b.post, b.where);
  }
};
constexpr SendLessT SendLess{};
constexpr RecvLessT RecvLess{};

using ChannelKey = std::tuple<uint32_t, int32_t, int32_t, uint32_t>;  // comm, src, dst, tag
template <typename T>
ChannelKey KeyOf(const T& x) {
  return ChannelKey{x.comm, x.src, x.dst, x.tag};
}
// Channel ids by key, numbered in the order first met: open addressing (linear probing) over
// the ids, the keys in a vector. Looked up once per record of the matching lists (a channel per
// tag: the previous record's channel seldom matches), where std::unordered_map's lookups took
// a sixth of the time of the sort they replace.
class ChannelIds {
 public:
  // k's id; a new one (the number of keys so far) when k is new.
  uint32_t Get(const ChannelKey& k) {
    if ((keys_.size() + 1) * 2 > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(k) & mask;; i = (i + 1) & mask) {
      const uint32_t s = slots_[i];
      if (s == UINT32_MAX) {
        slots_[i] = uint32_t(keys_.size());
        keys_.push_back(k);
        return slots_[i];
      }
      if (keys_[s] == k) return s;
    }
  }
  size_t size() const { return keys_.size(); }
  const std::vector<ChannelKey>& keys() const { return keys_; }

 private:
  static size_t Hash(const ChannelKey& k) {
    uint64_t x = uint64_t(std::get<0>(k)) * 0x9e3779b97f4a7c15u ^
                 uint64_t(uint32_t(std::get<1>(k))) * 0xc2b2ae3d27d4eb4fu ^
                 uint64_t(uint32_t(std::get<2>(k))) * 0x165667b19e3779f9u ^
                 uint64_t(std::get<3>(k)) * 0x27d4eb2f165667c5u;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return size_t(x ^ (x >> 31));
  }
  void Grow() {
    slots_.assign(std::max<size_t>(64, slots_.size() * 2), UINT32_MAX);
    const size_t mask = slots_.size() - 1;
    for (uint32_t id = 0; id < keys_.size(); ++id) {
      size_t i = Hash(keys_[id]) & mask;
      while (slots_[i] != UINT32_MAX) i = (i + 1) & mask;
      slots_[i] = id;
    }
  }
  std::vector<uint32_t> slots_;
  std::vector<ChannelKey> keys_;
};

// The part's list sorted, as a vector, as std::sort by `less` (a total order: the key ends with
// the unique `where`) would give it. Most channels' records arrive in their MPI order already
// (a rank's sends in time order), so the records are put channel by channel (a counting sort
// by channel, each channel's in the order met), and a channel is sorted only when it is not in
// order: std::sort of the whole list was an eighth of `invmw analyze`'s CPU at 10^8 events
// (2.3 s per list of 10^7 records through deque iterators, 1.1 s as a vector). With many
// channels (a tag per message) the list is sorted whole, as before.
template <typename T, typename Less>
std::vector<T> SortedList(ChunkedList<T>& l, Less less) {
  const size_t n = l.size();
  const size_t max_channels = std::max<size_t>(4096, n / 64);
  std::vector<uint32_t> id;
  ChannelIds ids;
  bool bucket = n > 1;
  if (bucket) {
    id.reserve(n);
    // The channel of each location's previous record: consecutive records of a location are
    // often of one channel (a fixed tag), and then the lookup is skipped.
    struct Last {
      ChannelKey key;
      uint32_t id = UINT32_MAX;
    };
    std::vector<Last> last;
    l.ForEach([&](const T& x) {
      if (!bucket) return;
      const ChannelKey k = KeyOf(x);
      const size_t loc = WhereLoc(x.where);
      if (loc >= last.size()) last.resize(loc + 1);
      Last& c = last[loc];
      if (c.id == UINT32_MAX || c.key != k) {
        c.key = k;
        c.id = ids.Get(k);
        if (ids.size() > max_channels) {
          bucket = false;
          return;
        }
      }
      id.push_back(c.id);
    });
  }
  if (!bucket) {
    std::vector<uint32_t>().swap(id);
    std::vector<T> v = l.Take();
    std::sort(v.begin(), v.end(), less);
    return v;
  }
  const std::vector<ChannelKey>& keys = ids.keys();
  // Channels in key order, and where each one's records start.
  std::vector<uint32_t> order(keys.size());
  for (uint32_t c = 0; c < order.size(); ++c) order[c] = c;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  std::vector<size_t> count(keys.size() + 1, 0), next(keys.size(), 0);
  for (uint32_t c : id) ++count[c];
  size_t at = 0;
  std::vector<size_t> bounds{0};
  for (uint32_t c : order) {
    next[c] = at;
    at += count[c];
    bounds.push_back(at);
  }
  std::vector<T> v(n);
  l.MoveInto(v, [&](size_t i) { return next[id[i]]++; });
  std::vector<uint32_t>().swap(id);
  for (size_t b = 0; b + 1 < bounds.size(); ++b) {
    const auto first = v.begin() + std::ptrdiff_t(bounds[b]);
    const auto last = v.begin() + std::ptrdiff_t(bounds[b + 1]);
    if (!std::is_sorted(first, last, less)) std::sort(first, last, less);
  }
  return v;
}

// A reader thread's matching lists, sorted (SortMatchLists).
struct SortedLists {
  std::vector<PendingSend> sends;
  std::vector<PendingRecv> recvs;
};

// On each reader thread, once its part is read: the sorting is most of the matching's time,
// and this way it is spread over the threads.
SortedLists SortMatchLists(State& s) {
  SortedLists out;
  out.sends = SortedList(s.sends, SendLess);
  out.recvs = SortedList(s.recvs, RecvLess);
  return out;
}

// The sorted lists of all parts seen as one sorted list (a k-way merge: `less` is a total
// order, so this is the order one sort of all of them gives), over the channels in [lo, hi).
// release: the pages of the entries walked are given back to the system as it goes (their
// contents are never read again; only pages wholly inside the range's part of a list, so
// another range walking its own part on another thread is not touched): the lists shrink as
// the messages are written, instead of both being held at once.
template <typename T, typename Less>
class MergedCursor {
 public:
  MergedCursor(const std::vector<const std::vector<T>*>& parts, const ChannelKey* lo,
               const ChannelKey* hi, Less less, bool release)
      : parts_(parts), less_(less), release_(release) {
    auto bound = [](const std::vector<T>& v, const ChannelKey* k, size_t dflt) {
      if (!k) return dflt;
      return size_t(std::lower_bound(v.begin(), v.end(), *k,
                                     [](const T& x, const ChannelKey& y) { return KeyOf(x) < y; }) -
                    v.begin());
    };
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    for (const auto* v : parts_) {
      pos_.push_back(bound(*v, lo, 0));
      end_.push_back(bound(*v, hi, v->size()));
      // The first whole page of the range's part.
      dropped_.push_back((uintptr_t(v->data() + pos_.back()) + page - 1) & ~(page - 1));
    }
    Pick();
  }
  bool valid() const { return cur_ != nullptr; }
  const T& operator*() const { return *cur_; }
  void Next() {
    ++pos_[which_];
    Pick();
    if (release_ && ++since_release_ >= 65536) {
      since_release_ = 0;
      Release();
    }
  }

 private:
  // Gives back the whole pages below the entry before the current one of each part (that
  // entry may still be in use by the caller).
  void Release() {
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    for (size_t k = 0; k < parts_.size(); ++k) {
      if (pos_[k] == 0) continue;
      const uintptr_t end = uintptr_t(parts_[k]->data() + pos_[k] - 1) & ~(page - 1);
      if (end <= dropped_[k]) continue;
      madvise(reinterpret_cast<void*>(dropped_[k]), end - dropped_[k], MADV_DONTNEED);
      dropped_[k] = end;
    }
  }

  void Pick() {
    cur_ = nullptr;
    for (size_t k = 0; k < parts_.size(); ++k) {
      if (pos_[k] >= end_[k]) continue;
      const T& x = (*parts_[k])[pos_[k]];
      if (!cur_ || less_(x, *cur_)) cur_ = &x, which_ = k;
    }
  }
  const std::vector<const std::vector<T>*>& parts_;
  Less less_;
  std::vector<size_t> pos_, end_;
  const T* cur_ = nullptr;
  size_t which_ = 0;
  const bool release_;
  std::vector<uintptr_t> dropped_;  // per part: its pages below this address were given back
  size_t since_release_ = 0;
};

// What matching the channels of one key range gives, in the order of one walk over them.
struct RangeMatch {
  size_t messages = 0;       // counted in the first walk
  std::vector<Message> out;  // written in the second, reserved exactly
  // Where the second walk writes instead of `out` (set for the first range: the trace's list,
  // reserved for all ranges, so that only the others' messages are copied into it).
  std::vector<Message>* dest = nullptr;
  std::vector<Unmatched> unmatched_sends, unmatched_recvs, recv_only;
};

// The channels in [lo, hi) in ascending order: a channel's k-th send and k-th receive form a
// message. emit false: only counts the messages (to reserve them exactly: they stay for the
// trace's life); emit true: writes them to r.out and the unmatched lists, giving back the
// lists' pages as it goes.
using SendCursor = MergedCursor<PendingSend, SendLessT>;
using RecvCursor = MergedCursor<PendingRecv, RecvLessT>;
void WalkRange(Trace& t, SendCursor& sc, RecvCursor& rc, bool emit, RangeMatch& r) {
  std::vector<Message>& out = r.dest ? *r.dest : r.out;
  if (emit && !r.dest) r.out.reserve(r.messages);
  size_t n = 0;
  while (sc.valid() || rc.valid()) {
    if (sc.valid() && (!rc.valid() || !(KeyOf(*rc) < KeyOf(*sc)))) {
      const ChannelKey k = KeyOf(*sc);
      for (; sc.valid() && KeyOf(*sc) == k; sc.Next()) {
        if (rc.valid() && KeyOf(*rc) == k) {
          const PendingSend& x = *sc;
          const PendingRecv rv = *rc;
          rc.Next();
          if (rv.uncompleted != UINT32_MAX) {
            if (emit) {
              UncompletedRecv& u = t.uncompleted_recvs[rv.uncompleted];
              u.matched = true;
              u.send_loc = WhereLoc(x.where);
              u.send_event = WhereEvent(x.where);
              u.bytes = x.bytes;
            }
            continue;
          }
          if (!emit) {
            ++n;
            continue;
          }
          ++n;
          Message& m = out.emplace_back();
          std::tie(m.comm, m.src, m.dst, m.tag) = k;
          m.send_loc = WhereLoc(x.where);
          m.send_event = WhereEvent(x.where);
          m.recv_loc = WhereLoc(rv.where);
          m.recv_event = WhereEvent(rv.where);
          m.bytes = x.bytes;
          m.recv_bytes = rv.bytes;
          m.send_time = x.time;
          m.recv_post_time = rv.post;
          m.recv_time = rv.time;
        } else if (emit) {
          r.unmatched_sends.push_back({WhereLoc((*sc).where), WhereEvent((*sc).where)});
        }
      }
      // A receive still open at the end that no message reached is no error.
      for (; rc.valid() && KeyOf(*rc) == k; rc.Next())
        if (emit && (*rc).uncompleted == UINT32_MAX)
          r.unmatched_recvs.push_back({WhereLoc((*rc).where), WhereEvent((*rc).where)});
    } else {
      const ChannelKey k = KeyOf(*rc);
      for (; rc.valid() && KeyOf(*rc) == k; rc.Next())
        if (emit && (*rc).uncompleted == UINT32_MAX)
          r.recv_only.push_back({WhereLoc((*rc).where), WhereEvent((*rc).where)});
    }
  }
  if (!emit) r.messages = n;
}

// The pages of v's reserved capacity where `count` messages from index `first` on will be
// copied, faulted in now (on the thread that calls it: a range's walk thread, in parallel with
// the others) rather than one by one by the serial copy after the walks. Only a hint: the
// storage is not touched by the program, and an error (an older kernel) changes nothing.
void PrefaultTail(const std::vector<Message>& v, size_t first, size_t count) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  if (count == 0 || first + count > v.capacity()) return;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(v.data() + first) + page - 1) / page * page;
  const uintptr_t hi = reinterpret_cast<uintptr_t>(v.data() + first + count) / page * page;
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE);
#else
  (void)v, (void)first, (void)count;
#endif
}

// fn(k) for k in [0, n) on n threads (the calling one included); the first error rethrown.
template <typename Fn>
void OnThreads(size_t n, Fn fn) {
  std::vector<std::exception_ptr> errors(n);
  auto run = [&](size_t k) {
    try {
      fn(k);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < n; ++k) pool.emplace_back(run, k);
  if (n > 0) run(0);
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Matches the reader threads' sorted lists (`parts`) and the receives posted and never
// completed (s.posted, s.posted_more) into t.messages, t.unmatched_sends/recvs and
// t.uncompleted_recvs: as one walk over all of them merged would, but without merging them (no
// copy of the lists) and on `threads` threads, each over a range of channels (the channels
// are independent; the ranges' results are joined in channel order).
void MatchMessages(State& s, std::vector<SortedLists>& parts, int threads) {
  Trace& t = *s.t;
  // Receives posted and never completed take their place in the posting order.
  std::vector<const PostedRecv*> open;
  std::vector<PendingRecv> extra;
  for (const auto& [key, p] : s.posted) open.push_back(&p);
  for (const auto& p : s.posted_more) open.push_back(&p);
  // In posting order; ties by location and event, not by the order in which a reader thread
  // met them, so that the result does not depend on how locations were split over threads.
  std::sort(open.begin(), open.end(), [](auto* a, auto* b) {
    return std::tie(a->u.post_time, a->u.loc, a->u.event) <
           std::tie(b->u.post_time, b->u.loc, b->u.event);
  });
  for (const PostedRecv* p : open) {
    t.uncompleted_recvs.push_back(p->u);
    if (p->u.wildcard) continue;
    PendingRecv r{p->u.comm,      p->u.peer,      p->u.rank, uint32_t(p->u.tag),
                  p->u.post_time, p->u.post_time, 0,         Where(p->u.loc, p->u.event)};
    r.uncompleted = uint32_t(t.uncompleted_recvs.size() - 1);
    extra.push_back(r);
  }
  std::sort(extra.begin(), extra.end(), RecvLess);
  std::vector<const std::vector<PendingSend>*> sends;
  std::vector<const std::vector<PendingRecv>*> recvs;
  for (const auto& p : parts) {
    sends.push_back(&p.sends);
    recvs.push_back(&p.recvs);
  }
  recvs.push_back(&extra);
  // The ranges: cut at channels found at equal steps through the largest list (each channel
  // wholly in one range).
  const std::vector<PendingSend>* largest = nullptr;
  for (const auto* v : sends)
    if (!largest || v->size() > largest->size()) largest = v;
  std::vector<ChannelKey> cuts;
  const size_t nranges = size_t(std::max(1, threads));
  if (largest && largest->size() >= nranges)
    for (size_t j = 1; j < nranges; ++j) {
      const ChannelKey k = KeyOf((*largest)[largest->size() * j / nranges]);
      if (cuts.empty() || cuts.back() < k) cuts.push_back(k);
    }
  std::vector<RangeMatch> ranges(cuts.size() + 1);
  std::vector<size_t> before(ranges.size(), t.messages.size());  // messages of earlier ranges
  auto walk = [&](bool emit) {
    // Every range's cursors are made before any range is walked: their binary searches read
    // the whole lists, whose walked pages an emitting walk gives back.
    std::vector<std::unique_ptr<SendCursor>> sc;
    std::vector<std::unique_ptr<RecvCursor>> rc;
    for (size_t k = 0; k < ranges.size(); ++k) {
      const ChannelKey* lo = k > 0 ? &cuts[k - 1] : nullptr;
      const ChannelKey* hi = k < cuts.size() ? &cuts[k] : nullptr;
      sc.push_back(std::make_unique<SendCursor>(sends, lo, hi, SendLess, emit));
      rc.push_back(std::make_unique<RecvCursor>(recvs, lo, hi, RecvLess, emit));
    }
    OnThreads(ranges.size(), [&](size_t k) {
      WalkRange(t, *sc[k], *rc[k], emit, ranges[k]);
      if (emit && k > 0) PrefaultTail(t.messages, before[k], ranges[k].messages);
    });
  };
  walk(false);
  size_t total = 0;
  for (const auto& r : ranges) total += r.messages;
  t.messages.reserve(t.messages.size() + total);
  ranges[0].dest = &t.messages;
  for (size_t k = 1; k < ranges.size(); ++k) before[k] = before[k - 1] + ranges[k - 1].messages;
  walk(true);
  for (auto& p : parts) {
    std::vector<PendingSend>().swap(p.sends);
    std::vector<PendingRecv>().swap(p.recvs);
  }
  std::vector<PendingRecv>().swap(extra);
  // The other ranges' messages joined after the first's, each range's freed once copied.
  for (size_t k = 1; k < ranges.size(); ++k) {
    t.messages.insert(t.messages.end(), ranges[k].out.begin(), ranges[k].out.end());
    std::vector<Message>().swap(ranges[k].out);
  }
  for (auto& r : ranges) {
    t.unmatched_sends.insert(t.unmatched_sends.end(), r.unmatched_sends.begin(),
                             r.unmatched_sends.end());
    t.unmatched_recvs.insert(t.unmatched_recvs.end(), r.unmatched_recvs.begin(),
                             r.unmatched_recvs.end());
  }
  // Unmatched receives of channels without sends: last.
  for (auto& r : ranges)
    t.unmatched_recvs.insert(t.unmatched_recvs.end(), r.recv_only.begin(), r.recv_only.end());
#ifdef __GLIBC__
  // The deques' blocks were small heap allocations: give their pages back, or the analysis's
  // large vectors (mapped apart from the heap) come on top of them.
  malloc_trim(0);
#endif
  if (s.sort_messages)
    std::sort(t.messages.begin(), t.messages.end(),
              [](const Message& a, const Message& b) { return a.send_time < b.send_time; });
}

// The archive's properties (INVMW::PARTIAL, ...).
void ReadProperties(OTF2_Reader* reader, Trace* t) {
  uint32_t nprops = 0;
  char** names = nullptr;
  if (OTF2_Reader_GetPropertyNames(reader, &nprops, &names) == OTF2_SUCCESS) {
    for (uint32_t i = 0; i < nprops; ++i) {
      char* value = nullptr;
      if (OTF2_Reader_GetProperty(reader, names[i], &value) == OTF2_SUCCESS && value) {
        t->properties[names[i]] = value;
        free(value);
      }
    }
    free(names);
  }
}

void ReadGlobalDefs(OTF2_Reader* reader, const std::string& path, State* s) {
  OTF2_GlobalDefReader* gdr = OTF2_Reader_GetGlobalDefReader(reader);
  if (!gdr)
    throw std::runtime_error(path + ": cannot read OTF2 archive (global definitions missing)");
  OTF2_GlobalDefReaderCallbacks* dc = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(dc, DefClock);
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(dc, DefString);
  OTF2_GlobalDefReaderCallbacks_SetRegionCallback(dc, DefRegion);
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(dc, DefLocation);
  OTF2_GlobalDefReaderCallbacks_SetGroupCallback(dc, DefGroup);
  OTF2_GlobalDefReaderCallbacks_SetCommCallback(dc, DefComm);
  OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(dc, DefAttribute);
  OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(dc, DefSourceCodeLocation);
  OTF2_GlobalDefReaderCallbacks_SetCallingContextCallback(dc, DefCallingContext);
  OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(dc, DefMetricMember);
  OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(dc, DefMetricClass);
  Check(OTF2_Reader_RegisterGlobalDefCallbacks(reader, gdr, dc, s), path,
        "RegisterGlobalDefCallbacks");
  OTF2_GlobalDefReaderCallbacks_Delete(dc);
  uint64_t ndefs = 0;
  Check(OTF2_Reader_ReadAllGlobalDefinitions(reader, gdr, &ndefs), path,
        "ReadAllGlobalDefinitions");
  OTF2_Reader_CloseGlobalDefReader(reader, gdr);
  if (s->t->timer_resolution == 0)
    throw std::runtime_error(path + ": no clock properties in the definitions");
}

// World ranks: position of a process's location in the COMM_LOCATIONS group; communicator
// members; locations in id order with their indices.
void AssignRanks(State* s) {
  Trace& t = *s->t;
  std::map<uint32_t, int32_t> rank_of_group;
  for (const auto& [id, g] : s->groups)
    if (g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS)
      for (size_t i = 0; i < g.members.size(); ++i)
        if (auto it = s->group_of_location.find(g.members[i]); it != s->group_of_location.end())
          rank_of_group[it->second] = int32_t(i);
  for (auto& [comm, group] : s->comm_group) {
    auto it = s->groups.find(group);
    if (it == s->groups.end()) continue;
    for (uint64_t m : it->second.members) t.comms[comm].members.push_back(int32_t(m));
  }
  std::sort(t.locations.begin(), t.locations.end(), [](auto& a, auto& b) { return a.id < b.id; });
  for (size_t i = 0; i < t.locations.size(); ++i) {
    auto& l = t.locations[i];
    if (auto it = rank_of_group.find(s->group_of_location[l.id]); it != rank_of_group.end())
      l.rank = it->second;
    s->loc_index[l.id] = i;
    t.locations_of_rank[l.rank].push_back(i);
  }
  s->open_enters.resize(t.locations.size());
  s->current.resize(t.locations.size());
  s->pending.assign(t.locations.size(), 0);
  s->entered.resize(t.locations.size());

  std::sort(t.metric_locations.begin(), t.metric_locations.end(),
            [](auto& a, auto& b) { return a.id < b.id; });
  for (size_t i = 0; i < t.metric_locations.size(); ++i) {
    auto& m = t.metric_locations[i];
    if (auto it = rank_of_group.find(s->group_of_location[m.id]); it != rank_of_group.end())
      m.rank = it->second;
    s->metric_loc_index[m.id] = i;
  }
}

// Reads one location's local definitions (its clock offsets: *uncertainty_ticks is the largest
// standard deviation) and opens its events.
void OpenLocation(OTF2_Reader* reader, const std::string& path, bool defs_open, uint64_t id,
                  uint64_t declared_events, double* uncertainty_ticks) {
  if (defs_open) {
    if (OTF2_DefReader* dr = OTF2_Reader_GetDefReader(reader, id)) {
      OTF2_DefReaderCallbacks* cb = OTF2_DefReaderCallbacks_New();
      OTF2_DefReaderCallbacks_SetClockOffsetCallback(
          cb, [](void* u, OTF2_TimeStamp, int64_t, double sd) {
            double* m = static_cast<double*>(u);
            if (sd > *m) *m = sd;
            return OTF2_CALLBACK_SUCCESS;
          });
      OTF2_Reader_RegisterDefCallbacks(reader, dr, cb, uncertainty_ticks);
      OTF2_DefReaderCallbacks_Delete(cb);
      uint64_t n = 0;
      OTF2_Reader_ReadAllLocalDefinitions(reader, dr, &n);
      OTF2_Reader_CloseDefReader(reader, dr);
    }
  }
  if (declared_events && !OTF2_Reader_GetEvtReader(reader, id))
    throw std::runtime_error(path + ": cannot open the events of location " + std::to_string(id));
}

// Selects the locations of the given ranks and opens their events; local definitions carry the
// clock offsets, so they are read before the events.
// A StreamOptions selection instead of ranks when `stream` is set.
void OpenLocations(OTF2_Reader* reader, const std::string& path, Trace* t,
                   const std::vector<char>& rank_wanted, bool keep_events = true,
                   bool metrics = true, const StreamOptions* stream = nullptr) {
  auto wanted_rank = [&](int32_t rank) {
    return rank >= 0 && size_t(rank) < rank_wanted.size() ? rank_wanted[size_t(rank)] != 0
                                                          : rank_wanted.back() != 0;
  };
  auto selected = [](const std::vector<char>& mask, size_t i) {
    return mask.empty() || (i < mask.size() && mask[i]);
  };
  auto wanted = [&](size_t i) {
    return stream ? selected(stream->locations, i) : wanted_rank(t->locations[i].rank);
  };
  auto wanted_metric = [&](size_t i) {
    return stream ? selected(stream->metric_locations, i)
                  : metrics && wanted_rank(t->metric_locations[i].rank);
  };
  for (size_t i = 0; i < t->locations.size(); ++i)
    if (wanted(i))
      Check(OTF2_Reader_SelectLocation(reader, t->locations[i].id), path, "SelectLocation");
  for (size_t i = 0; i < t->metric_locations.size(); ++i)
    if (wanted_metric(i))
      Check(OTF2_Reader_SelectLocation(reader, t->metric_locations[i].id), path, "SelectLocation");
  const bool defs_open = OTF2_Reader_OpenDefFiles(reader) == OTF2_SUCCESS;
  Check(OTF2_Reader_OpenEvtFiles(reader), path, "OpenEvtFiles");
  for (size_t i = 0; i < t->locations.size(); ++i) {
    auto& l = t->locations[i];
    if (!wanted(i)) continue;
    if (stream) l.event_count = 0;
    double u = 0;
    OpenLocation(reader, path, defs_open, l.id, l.declared_events, &u);
    if (t->timer_resolution) l.clock_uncertainty_s = u / double(t->timer_resolution);
    // Room for the declared events at once: growing the vector copies every event about once
    // more and touches twice the memory (a tenth of the reading time on 10^7 events). Only
    // address space until written; a forged count too large for it is simply not reserved.
    try {
      if (keep_events && l.declared_events <= (uint64_t(1) << 28))
        l.events.reserve(l.declared_events);
    } catch (const std::exception&) {
    }
  }
  for (size_t i = 0; i < t->metric_locations.size(); ++i) {
    const auto& m = t->metric_locations[i];
    if (!wanted_metric(i)) continue;
    double u = 0;
    OpenLocation(reader, path, defs_open, m.id, m.declared_events, &u);
  }
  if (defs_open) OTF2_Reader_CloseDefFiles(reader);
}

// The ranks in `parts` groups of about equal declared events (largest first onto the least
// loaded group; ties by rank): deterministic. The last slot of each mask stands for ranks not
// in COMM_LOCATIONS (-1 or beyond the world), which go to the first group.
std::vector<std::vector<char>> SplitRanks(const Trace& t, int parts) {
  int32_t max_rank = -1;
  for (const auto& l : t.locations) max_rank = std::max(max_rank, l.rank);
  for (const auto& m : t.metric_locations) max_rank = std::max(max_rank, m.rank);
  const size_t slots = size_t(max_rank + 1) + 1;
  std::vector<uint64_t> load(slots, 0);
  auto slot = [&](int32_t r) { return r >= 0 ? size_t(r) : slots - 1; };
  for (const auto& l : t.locations) load[slot(l.rank)] += l.declared_events + 1;
  for (const auto& m : t.metric_locations) load[slot(m.rank)] += m.declared_events + 1;
  std::vector<size_t> order(slots);
  for (size_t i = 0; i < slots; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return load[a] > load[b]; });
  std::vector<std::vector<char>> masks(size_t(parts), std::vector<char>(slots, 0));
  std::vector<uint64_t> part_load(size_t(parts), 0);
  for (size_t r : order) {
    if (load[r] == 0 && r != slots - 1) continue;
    size_t best = 0;
    if (r != slots - 1)
      for (size_t p = 1; p < size_t(parts); ++p)
        if (part_load[p] < part_load[best]) best = p;
    masks[best][r] = 1;
    part_load[best] += load[r];
  }
  return masks;
}

void ReadEvents(OTF2_Reader* reader, const std::string& path, State* s) {
  OTF2_GlobalEvtReader* ger = OTF2_Reader_GetGlobalEvtReader(reader);
  if (!ger)
    throw std::runtime_error(path + ": cannot read OTF2 archive (GetGlobalEvtReader failed)");
  OTF2_GlobalEvtReaderCallbacks* ec = OTF2_GlobalEvtReaderCallbacks_New();
  OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(ec, EvEnter);
  OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(ec, EvLeave);
  OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(ec, EvSend);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback(ec, EvIsend);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback(ec, EvIsendComplete);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback(ec, EvIrecvRequest);
  OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(ec, EvRecv);
  OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback(ec, EvIrecv);
  OTF2_GlobalEvtReaderCallbacks_SetMpiRequestTestCallback(ec, EvTest);
  OTF2_GlobalEvtReaderCallbacks_SetMpiRequestCancelledCallback(ec, EvCancel);
  OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(ec, EvCollBegin);
  OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(ec, EvCollEnd);
  OTF2_GlobalEvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(ec, EvNbcRequest);
  OTF2_GlobalEvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(ec, EvNbcComplete);
  OTF2_GlobalEvtReaderCallbacks_SetCommCreateCallback(ec, EvCommCreate);
  OTF2_GlobalEvtReaderCallbacks_SetCommDestroyCallback(ec, EvCommDestroy);
  OTF2_GlobalEvtReaderCallbacks_SetUnknownCallback(ec, EvUnknown);
  OTF2_GlobalEvtReaderCallbacks_SetMetricCallback(ec, EvMetric);
  Check(OTF2_Reader_RegisterGlobalEvtCallbacks(reader, ger, ec, s), path,
        "RegisterGlobalEvtCallbacks");
  OTF2_GlobalEvtReaderCallbacks_Delete(ec);
  uint64_t nev = 0;
  Check(OTF2_Reader_ReadAllGlobalEvents(reader, ger, &nev), path, "ReadAllGlobalEvents");
  s->Flush();
  OTF2_Reader_CloseGlobalEvtReader(reader, ger);
  OTF2_Reader_CloseEvtFiles(reader);
}

}  // namespace

struct ReaderCloser {
  OTF2_Reader* r;
  ~ReaderCloser() { OTF2_Reader_Close(r); }
};

// One reader thread: its own OTF2 reader over the locations of its ranks, merged in time order
// (a rank's threads together: a receive may be posted on one and completed on another), into
// those locations of *s->t (no other thread touches them) and its own matching lists.
void ReadPart(const std::string& path, const std::vector<char>& ranks, State* s,
              bool metrics = true, const StreamOptions* stream = nullptr) {
  OTF2_Reader* reader = OpenArchiveForReading(path);
  ReaderCloser closer{reader};
  // The reader needs the global definitions read before it reads events; their content is
  // the same as the main reader's.
  Trace defs;
  State d;
  d.t = &defs;
  ReadGlobalDefs(reader, path, &d);
  s->attr_source = d.attr_source;
  s->attr_tag = d.attr_tag;
  s->attr_comm = d.attr_comm;
  s->attr_coalesced = d.attr_coalesced;
  s->attr_cut_off = d.attr_cut_off;
  s->attr_callsite = d.attr_callsite;
  OpenLocations(reader, path, s->t, ranks, s->keep_events, metrics, stream);
  ReadEvents(reader, path, s);
}

Trace ReadTrace(const std::string& path, const ReadOptions& options) {
  Trace t;
  t.path = path;
  State s;
  s.t = &t;
  {
    OTF2_Reader* reader = OpenArchiveForReading(path);
    ReaderCloser closer{reader};
    ReadProperties(reader, &t);
    ReadGlobalDefs(reader, path, &s);
  }
  AssignRanks(&s);
  s.keep_events = options.keep_events;
  s.sort_messages = options.sort_messages;
  t.events_streamed = !options.keep_events;
  const int parts =
      std::max(1, std::min(options.threads, int(std::max<size_t>(1, t.locations_of_rank.size()))));
  const auto masks = SplitRanks(t, parts);
  std::vector<State> states(static_cast<size_t>(parts), s);
  std::vector<std::string> errors(static_cast<size_t>(parts));
  std::vector<double> cpu(static_cast<size_t>(parts), 0.0);
  std::vector<SortedLists> sorted(static_cast<size_t>(parts));
  auto run = [&](size_t k) {
    auto thread_cpu = [] {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
    };
    const double c0 = thread_cpu();
    try {
      ReadPart(path, masks[k], &states[k]);
      sorted[k] = SortMatchLists(states[k]);
    } catch (const std::exception& e) {
      errors[k] = e.what();
    }
    cpu[k] = thread_cpu() - c0;
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < size_t(parts); ++k) threads.emplace_back(run, k);
  run(0);
  for (auto& th : threads) th.join();
  if (options.thread_cpu_s) *options.thread_cpu_s = cpu;
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
  // The matching lists of all parts together; the order of a list does not matter (matching
  // sorts by time, location and event).
  for (auto& st : states) {
    for (size_t li = 0; li < st.entered.size(); ++li)
      for (size_t r = 0; r < st.entered[li].size(); ++r)
        if (st.entered[li][r]) t.locations[li].regions_entered.push_back(uint32_t(r));
    for (auto& [key, p] : st.posted) s.posted_more.push_back(p);
  }
  // Each part's lists are sorted: matched without merging them, on the reader threads' count.
  MatchMessages(s, sorted, parts);
  return t;
}

void StreamRankEvents(const Trace& t, int32_t rank,
                      const std::function<void(size_t, const TraceEvent&)>& fn) {
  // The definitions this reader's callbacks consult (ranks, communicators, clock), without the
  // first pass's messages and samples; locations keep their indices.
  Trace light;
  light.path = t.path;
  light.timer_resolution = t.timer_resolution;
  light.global_offset = t.global_offset;
  light.regions = t.regions;
  light.callsites = t.callsites;
  light.comms = t.comms;
  light.locations.reserve(t.locations.size());
  for (const auto& l : t.locations) {
    TraceLocation c;
    c.id = l.id;
    c.name = l.name;
    c.rank = l.rank;
    c.declared_events = l.declared_events;
    light.locations.push_back(std::move(c));
  }
  State s;
  s.t = &light;
  s.keep_events = false;
  s.match = false;
  s.sink = &fn;
  for (size_t i = 0; i < light.locations.size(); ++i) s.loc_index[light.locations[i].id] = i;
  s.open_enters.resize(light.locations.size());
  s.current.resize(light.locations.size());
  s.pending.assign(light.locations.size(), 0);
  s.entered.resize(light.locations.size());
  int32_t max_rank = -1;
  for (const auto& l : t.locations) max_rank = std::max(max_rank, l.rank);
  for (const auto& m : t.metric_locations) max_rank = std::max(max_rank, m.rank);
  std::vector<char> mask(size_t(max_rank + 1) + 1, 0);
  mask[rank >= 0 && rank <= max_rank ? size_t(rank) : mask.size() - 1] = 1;
  ReadPart(t.path, mask, &s, /*metrics=*/false);
}

Trace ReadTraceDefinitions(const std::string& path) {
  Trace t;
  t.path = path;
  State s;
  s.t = &t;
  {
    OTF2_Reader* reader = OpenArchiveForReading(path);
    ReaderCloser closer{reader};
    ReadProperties(reader, &t);
    ReadGlobalDefs(reader, path, &s);
  }
  AssignRanks(&s);
  t.events_streamed = true;
  return t;
}

void StreamTrace(Trace* t, const StreamOptions& options) {
  State s;
  s.t = t;
  s.keep_events = false;
  s.match = false;
  s.stream = &options;
  for (size_t i = 0; i < t->locations.size(); ++i) s.loc_index[t->locations[i].id] = i;
  for (size_t i = 0; i < t->metric_locations.size(); ++i)
    s.metric_loc_index[t->metric_locations[i].id] = i;
  s.open_enters.resize(t->locations.size());
  s.current.resize(t->locations.size());
  s.pending.assign(t->locations.size(), 0);
  s.entered.resize(t->locations.size());
  // Locations that declare no events have no event reader: with only those there is nothing
  // to read (OTF2 has no global reader over none).
  auto selected = [](const std::vector<char>& mask, size_t i) {
    return mask.empty() || (i < mask.size() && mask[i]);
  };
  bool any = false;
  for (size_t i = 0; i < t->locations.size(); ++i)
    if (selected(options.locations, i)) {
      t->locations[i].event_count = 0;
      any |= t->locations[i].declared_events > 0;
    }
  for (size_t i = 0; i < t->metric_locations.size(); ++i)
    any |= selected(options.metric_locations, i) && t->metric_locations[i].declared_events > 0;
  if (any) ReadPart(t->path, {1}, &s, /*metrics=*/true, &options);
}

int DefaultReadThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(std::min(n, 64u));
}

}  // namespace invmw::otf2
