#include "analysis/timeline.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <otf2/OTF2_Definitions.h>
#include <otf2/OTF2_Events.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <thread>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <map>
#include <unordered_map>

namespace invmw::analysis {

using invmw::otf2::Trace;
using invmw::otf2::TraceEvent;

const char* CategoryName(Category c) {
  static const char* const names[] = {"computation", "transfer",    "idle",
                                      "sync_wait",   "sync_op",     "io",
                                      "memory_io",   "unallocated", "paused"};
  return c < kNumCategories ? names[c] : "?";
}

double ObservedTotal(const Times& t) {
  double s = 0;
  for (int i = 0; i < kNumCategories; ++i)
    if (i != kPaused) s += t[i];
  return s;
}

double CompactSegments::start(size_t i, double window_start) const {
  if (info[i] & 16u) {
    auto it =
        std::lower_bound(starts.begin(), starts.end(), i,
                         [](const std::pair<size_t, double>& p, size_t v) { return p.first < v; });
    return it->second;
  }
  return i ? ends[i - 1] : window_start;
}

const char* PhaseSourceName(PhaseSource s) {
  switch (s) {
    case PhaseSource::kPcontrol:
      return "MPI_Pcontrol";
    case PhaseSource::kUserRegions:
      return "user regions";
    case PhaseSource::kWholeRun:
      return "whole run";
  }
  return "?";
}

namespace {

// What a region means for the mapping, decided once per region definition.
enum class Kind : uint8_t {
  kUser,  // not MPI: a user or compiler region (phase names)
  kP2p,
  kCollective,
  kIo,
  kRma,
  kOtherMpi,
  kInit,
  kFinalize,
  kPcontrol,
  kFlush,
  kPaused,
};

Kind KindOf(const invmw::otf2::TraceRegion& r) {
  if (r.name == "invmw:flush") return Kind::kFlush;
  if (r.name == "invmw:paused") return Kind::kPaused;
  if (r.paradigm != OTF2_PARADIGM_MPI) return Kind::kUser;
  if (r.name == "MPI_Init" || r.name == "MPI_Init_thread") return Kind::kInit;
  if (r.name == "MPI_Finalize") return Kind::kFinalize;
  if (r.name == "MPI_Pcontrol") return Kind::kPcontrol;
  switch (r.role) {
    case OTF2_REGION_ROLE_POINT2POINT:
      return Kind::kP2p;
    case OTF2_REGION_ROLE_BARRIER:
    case OTF2_REGION_ROLE_IMPLICIT_BARRIER:
    case OTF2_REGION_ROLE_COLL_ONE2ALL:
    case OTF2_REGION_ROLE_COLL_ALL2ONE:
    case OTF2_REGION_ROLE_COLL_ALL2ALL:
    case OTF2_REGION_ROLE_COLL_OTHER:
      return Kind::kCollective;
    case OTF2_REGION_ROLE_FILE_IO:
    case OTF2_REGION_ROLE_FILE_IO_METADATA:
      return Kind::kIo;
    case OTF2_REGION_ROLE_RMA:
      return Kind::kRma;
    default:
      return Kind::kOtherMpi;
  }
}

// A wait a call may contain: the call cannot have ended its waiting before `until`, the moment
// `rank` arrived. need_end_after: only counts when the call ended after `until` (late receiver).
struct WaitCandidate {
  double until;
  int32_t rank;
  bool need_end_after;
};

// One top-level MPI call (or pause) of a rank.
// 32 bytes: every call of every rank is held until the collectives are matched. The rare
// values (time in invmw:flush, a coalesced visit standing for several calls) are kept apart
// (RankWork::flush, RankWork::multi), by call index.
struct Call {
  enum Flag : uint8_t {
    kP2pData = 1,   // completed or started a message
    kCollDone = 2,  // completed (part of) a collective
    kCollData = 4,  // ... that moved data
    kWaitSync = 8,  // the resolved wait is sync_wait (else idle)
    kCutOff = 16,   // the run ended inside the call: all of it was waiting
  };
  double start = 0, end = 0;
  double wait_until = -1;  // resolved wait (-1 none)
  int32_t wait_rank = -1;
  uint16_t phase = 0;
  Kind kind = Kind::kOtherMpi;
  uint8_t flags = 0;
  bool Has(Flag f) const { return (flags & f) != 0; }
  void Set(Flag f, bool on = true) { flags = on ? uint8_t(flags | f) : uint8_t(flags & ~f); }
};
static_assert(sizeof(Call) == 32, "Call grew: it is held per call of every rank");

// The partner side of a message at one of the location's send or receive events: for a send,
// the receive's post time and rank; for a receive, the send's start and rank.
// 16 bytes (two per message, all built before the messages can be freed): the event index and
// the rank share a word.
struct PartnerEnd {
  double time;
  uint64_t where;  // event index << 24 | (rank + 1)

  static constexpr uint64_t kMaxEvent = (uint64_t(1) << 40) - 1;
  static constexpr int32_t kMaxRank = (1 << 24) - 2;
  static PartnerEnd Make(uint64_t event, double time, int32_t rank) {
    if (event > kMaxEvent || rank > kMaxRank || rank < -1)
      throw std::runtime_error("message at event " + std::to_string(event) + " with rank " +
                               std::to_string(rank) +
                               ": beyond 2^40 events per location or 2^24 - 2 ranks");
    return {time, event << 24 | uint64_t(rank + 1)};
  }
  uint64_t event() const { return where >> 24; }
  int32_t rank() const { return int32_t(where & 0xffffffu) - 1; }
};
static_assert(sizeof(PartnerEnd) == 16, "PartnerEnd is held per message end");

// The calling context of a call that has one (RankWork::sites): kept apart from Call, so that
// traces without contexts hold nothing more per call.
struct CallSiteOf {
  uint32_t call;      // index into RankWork::calls
  uint32_t region;    // the MPI function
  uint32_t callsite;  // Trace::callsites
};

// One rank's part in one collective operation (32 bytes: one per collective of every rank is
// held until the collectives are matched).
struct Participation {
  int32_t rank;
  uint32_t comm;
  uint32_t op;
  int32_t root;   // world rank, -1 none
  double init;    // entry into the blocking call / the nonblocking initiation
  uint32_t call;  // index of the call that completed it (where its waiting happens)
  uint32_t seq = 0;
};
static_assert(sizeof(Participation) == 32, "Participation is held per collective of every rank");

struct PhaseMark {
  double time;
  uint16_t phase;
};

struct RankWork {
  RankTimeline* tl;
  std::vector<Call> calls;
  std::vector<std::pair<uint32_t, double>> flush;    // (call, time in invmw:flush), nonzero
  std::vector<std::pair<uint32_t, uint32_t>> multi;  // (call, calls it stands for), not 1
  std::vector<CallSiteOf> sites;                     // calls with a calling context, by call
  std::vector<PhaseMark> marks;  // phase changes in time order (first: phase at the start)
};

// Phase names shared across ranks.
struct PhaseTable {
  std::vector<std::string>* names;
  std::unordered_map<std::string, uint16_t> index;
  uint16_t Get(const std::string& name) {
    auto it = index.find(name);
    if (it != index.end()) return it->second;
    uint16_t id = uint16_t(names->size());
    names->push_back(name);
    index.emplace(name, id);
    return id;
  }
};

// Pass 1 over one location: top-level calls with their point-to-point wait candidates and
// collective participations; the window; phase marks.
// The events arrive one at a time (Feed), so the location's events need not be in memory.
class LocationScanner {
 public:
  LocationScanner(const Trace& t, const std::vector<Kind>& kinds,
                  const std::vector<PartnerEnd>& partners, PhaseSource source, PhaseTable& phases,
                  RankWork& w, std::vector<Participation>& parts)
      : t_(t),
        kinds_(kinds),
        partners_(partners),
        source_(source),
        phases_(phases),
        w_(w),
        tl_(*w.tl),
        parts_(parts),
        parts_begin_(parts.size()) {}

  void Begin(double default_start, double default_end) {
    tl_.start = default_start;
    tl_.end = default_end;
    if (source_ == PhaseSource::kPcontrol)
      Mark(tl_.start, phases_.Get("pcontrol 0"));
    else if (source_ == PhaseSource::kUserRegions)
      Mark(tl_.start, phases_.Get("(outside regions)"));
    else
      Mark(tl_.start, phases_.Get("run"));
  }

  // The location's next event.
  void Feed(const TraceEvent& e) {
    const size_t i = index_++;
    last_time_ = e.time;
    if (done_) return;  // nothing after MPI_Finalize is analysed
    if (pcontrol_pending_) {
      // MPI_Pcontrol(0) is followed at once by the paused region; it pauses, it does not
      // start a phase.
      pcontrol_pending_ = false;
      const bool pauses = e.type == TraceEvent::kEnter && e.region < kinds_.size() &&
                          kinds_[e.region] == Kind::kPaused;
      if (!pauses) PcontrolPhase();
    }
    if (!Event(e, i)) done_ = true;
  }

  void Finish() {
    if (pcontrol_pending_ && !done_) PcontrolPhase();
    pcontrol_pending_ = false;
    if (tl_.end < tl_.start) tl_.end = tl_.start;
    if (in_call_) {  // a call still open at the end of a partial trace
      cur_.end = last_time_;
      if (cur_.kind != Kind::kFinalize && cur_.kind != Kind::kInit) File();
    }
  }

 private:
  void Mark(double time, uint16_t p) {
    if (p == phase_ && !w_.marks.empty()) return;
    phase_ = p;
    w_.marks.push_back({time, p});
  }

  void PcontrolPhase() {
    Mark(pcontrol_time_, phases_.Get("pcontrol " + std::to_string(++pcontrol_phases_)));
  }

  // The partner of event i's message, nullptr none; i only grows.
  const PartnerEnd* PartnerOf(size_t i) {
    while (msg_next_ < partners_.size() && partners_[msg_next_].event() < i) ++msg_next_;
    return msg_next_ < partners_.size() && partners_[msg_next_].event() == i ? &partners_[msg_next_]
                                                                             : nullptr;
  }

  // Adds the current call to the rank's list.
  void File() {
    if (w_.calls.size() >= UINT32_MAX)
      throw std::runtime_error("rank " + std::to_string(tl_.rank) + ": more than 2^32 MPI calls");
    const uint32_t k = uint32_t(w_.calls.size());
    if (cur_flush_ != 0) w_.flush.push_back({k, cur_flush_});
    if (cur_calls_ != 1) w_.multi.push_back({k, cur_calls_});
    if (cur_site_ != UINT32_MAX) w_.sites.push_back({k, cur_region_, cur_site_});
    w_.calls.push_back(cur_);
  }

  // Event i; false when the scan ends there.
  bool Event(const TraceEvent& e, size_t i) {
    switch (e.type) {
      case TraceEvent::kEnter:
        Enter(e);
        return true;
      case TraceEvent::kLeave:
        return Leave(e);
      case TraceEvent::kMpiSend:
      case TraceEvent::kMpiIsend:
      case TraceEvent::kMpiIsendComplete:
      case TraceEvent::kMpiRecv:
      case TraceEvent::kMpiIrecv:
        PointToPoint(e, i);
        return true;
      case TraceEvent::kNonBlockingCollectiveRequest:
        nbc_init_[e.request] = in_call_ ? cur_.start : e.time;
        return true;
      case TraceEvent::kMpiCollectiveEnd:
      case TraceEvent::kNonBlockingCollectiveComplete:
        if (in_call_) CollectiveEnd(e);
        return true;
      default:
        return true;
    }
  }

  void Enter(const TraceEvent& e) {
    const Kind k = e.region < kinds_.size() ? kinds_[e.region] : Kind::kUser;
    if (in_call_) {
      if (k == Kind::kFlush) flush_start_ = e.time;
      stack_.push_back(k);
      return;
    }
    if (k == Kind::kUser) {
      if (source_ == PhaseSource::kUserRegions && user_.empty())
        Mark(e.time, phases_.Get(t_.regions[e.region].name));
      user_.push_back(e.region);
      return;
    }
    in_call_ = true;
    cur_ = Call();
    cur_.start = e.time;
    cur_flush_ = 0;
    cur_calls_ = e.calls;
    cur_.kind = k;
    cur_region_ = e.region;
    cur_site_ = e.callsite;
    cur_.phase = phase_;
    cands_.clear();
    stack_.assign(1, k);
  }

  bool Leave(const TraceEvent& e) {
    if (!in_call_) {
      if (!user_.empty()) {
        user_.pop_back();
        if (source_ == PhaseSource::kUserRegions && user_.empty())
          Mark(e.time, phases_.Get("(outside regions)"));
      }
      return true;
    }
    const Kind k = stack_.back();
    stack_.pop_back();
    if (k == Kind::kFlush) cur_flush_ += e.time - flush_start_;
    if (!stack_.empty()) return true;
    in_call_ = false;
    cur_.end = e.time;
    cur_.Set(Call::kCutOff, e.cut_off);
    ResolveWait();
    return EndCall(e);
  }

  // The latest moment the finished call must have waited for, over its candidates.
  void ResolveWait() {
    for (const auto& c : cands_) {
      if (c.until <= cur_.start || (c.need_end_after && cur_.end <= c.until)) continue;
      const double u = std::min(c.until, cur_.end);
      if (u > cur_.wait_until) {
        cur_.wait_until = u;
        cur_.wait_rank = c.rank;
        cur_.Set(Call::kWaitSync, false);
      }
    }
  }

  // Files the call that ended at event e; false after MPI_Finalize.
  bool EndCall(const TraceEvent& e) {
    if (cur_.kind == Kind::kInit) {
      tl_.start = cur_.end;
      // Anything before the end of MPI_Init lies outside the window.
      w_.calls.clear();
      w_.flush.clear();
      w_.multi.clear();
      w_.sites.clear();
      parts_.resize(parts_begin_);
      w_.marks.front().time = tl_.start;
      return true;
    }
    if (cur_.kind == Kind::kFinalize) {
      tl_.end = cur_.start;
      return false;
    }
    File();
    if (cur_.kind == Kind::kPcontrol && source_ == PhaseSource::kPcontrol) {
      // Whether it starts a phase depends on the next event (Feed).
      pcontrol_pending_ = true;
      pcontrol_time_ = e.time;
    }
    return true;
  }

  // Messages: what they add to the rank's counts, and the wait candidates of the current call.
  void PointToPoint(const TraceEvent& e, size_t i) {
    const PartnerEnd* m = PartnerOf(i);
    switch (e.type) {
      case TraceEvent::kMpiSend: {
        if (!in_call_) break;
        cur_.Set(Call::kP2pData);
        ++tl_.messages_sent;
        tl_.bytes_sent += e.bytes;
        if (m) cands_.push_back({m->time, m->rank(), true});
        break;
      }
      case TraceEvent::kMpiIsend: {
        if (in_call_) cur_.Set(Call::kP2pData);
        ++tl_.messages_sent;
        tl_.bytes_sent += e.bytes;
        if (m) isend_msg_[e.request] = {m->time, m->rank()};
        break;
      }
      case TraceEvent::kMpiIsendComplete: {
        if (!in_call_) break;
        cur_.Set(Call::kP2pData);
        auto it = isend_msg_.find(e.request);
        if (it == isend_msg_.end()) break;
        cands_.push_back({it->second.first, it->second.second, true});
        isend_msg_.erase(it);
        break;
      }
      default: {  // kMpiRecv, kMpiIrecv
        if (!in_call_) break;
        cur_.Set(Call::kP2pData);
        if (m) cands_.push_back({m->time, m->rank(), false});
        break;
      }
    }
  }

  // The rank's part in a collective, completed inside the current call.
  void CollectiveEnd(const TraceEvent& e) {
    double init = cur_.start;
    if (e.type == TraceEvent::kNonBlockingCollectiveComplete) {
      auto it = nbc_init_.find(e.request);
      if (it != nbc_init_.end()) {
        init = it->second;
        nbc_init_.erase(it);
      }
    }
    const bool data = e.bytes + e.bytes_recv > 0;
    cur_.Set(Call::kCollDone);
    if (data) cur_.Set(Call::kCollData);
    if (w_.calls.size() >= UINT32_MAX)
      throw std::runtime_error("rank " + std::to_string(tl_.rank) + ": more than 2^32 MPI calls");
    parts_.push_back({tl_.rank, e.comm, e.coll_op, e.peer, init, uint32_t(w_.calls.size())});
  }

  const Trace& t_;
  const std::vector<Kind>& kinds_;
  const std::vector<PartnerEnd>& partners_;  // by event index
  size_t msg_next_ = 0;
  size_t index_ = 0;  // of the next event
  double last_time_ = 0;
  bool done_ = false;
  bool pcontrol_pending_ = false;
  double pcontrol_time_ = 0;
  const PhaseSource source_;
  PhaseTable& phases_;
  RankWork& w_;
  RankTimeline& tl_;
  std::vector<Participation>& parts_;
  const size_t parts_begin_;

  // request -> the receive's post time and rank
  std::unordered_map<uint64_t, std::pair<double, int32_t>> isend_msg_;
  std::unordered_map<uint64_t, double> nbc_init_;  // request -> initiation time
  std::vector<WaitCandidate> cands_;
  std::vector<Kind> stack_;     // regions open inside the current top-level call
  std::vector<uint32_t> user_;  // open user regions outside MPI calls
  Call cur_;
  double cur_flush_ = 0;    // time in invmw:flush inside the current call
  uint32_t cur_calls_ = 1;  // calls the current visit stands for
  uint32_t cur_region_ = UINT32_MAX, cur_site_ = UINT32_MAX;  // the open call's context
  bool in_call_ = false;
  double flush_start_ = 0;
  uint16_t phase_ = 0;
  int pcontrol_phases_ = 0;
};

bool OneToAll(uint32_t op) {
  return op == OTF2_COLLECTIVE_OP_BCAST || op == OTF2_COLLECTIVE_OP_SCATTER ||
         op == OTF2_COLLECTIVE_OP_SCATTERV;
}
bool AllToOne(uint32_t op) {
  return op == OTF2_COLLECTIVE_OP_GATHER || op == OTF2_COLLECTIVE_OP_GATHERV ||
         op == OTF2_COLLECTIVE_OP_REDUCE;
}

// std::sort of v by `less`, a total order (so the result is that of one sort), on two threads
// when `threads` > 1: the halves apart, then merged.
template <typename T, typename Less>
void SortTotal(std::vector<T>& v, Less less, int threads) {
  if (threads <= 1 || v.size() < 65536) {
    std::sort(v.begin(), v.end(), less);
    return;
  }
  const auto mid = v.begin() + std::ptrdiff_t(v.size() / 2);
  std::thread th([&] { std::sort(mid, v.end(), less); });
  std::sort(v.begin(), mid, less);
  th.join();
  std::inplace_merge(v.begin(), mid, v.end(), less);
}

// Collective instances: per communicator, the k-th collective a rank initiated is everyone's k-th.
void MatchCollectives(const std::map<uint32_t, invmw::otf2::TraceComm>& comms,
                      std::vector<std::vector<Participation>>& rank_parts,
                      std::map<int32_t, RankWork*>& work, Timelines& out, int threads) {
  // The participations in (communicator, rank, initiation, list order) order, as runs of one
  // communicator and rank. Usually (one communicator, blocking calls) the ranks' own lists,
  // in rank order, are that already: then they are the runs, neither joined nor sorted.
  struct Run {
    const Participation* next;
    const Participation* end;
  };
  std::vector<Run> all_runs;
  bool direct = true;
  {
    size_t nparts = 0;
    for (const auto& rp : rank_parts) nparts += rp.size();
    if (nparts >= UINT32_MAX) throw std::runtime_error("more than 2^32 collective calls");
    bool have = false;
    uint32_t comm = 0;
    int32_t prev_rank = 0;
    for (const auto& rp : rank_parts) {
      if (rp.empty()) continue;
      if (!have) comm = rp[0].comm;
      if (have && rp[0].rank <= prev_rank) direct = false;
      have = true;
      prev_rank = rp[0].rank;
      for (size_t k = 0; k < rp.size() && direct; ++k)
        if (rp[k].comm != comm || rp[k].rank != rp[0].rank ||
            (k > 0 && rp[k].init < rp[k - 1].init))
          direct = false;
      if (!direct) break;
      all_runs.push_back({rp.data(), rp.data() + rp.size()});
    }
  }
  std::vector<Participation> parts;
  if (!direct) {
    all_runs.clear();
    size_t nparts = 0;
    for (const auto& rp : rank_parts) nparts += rp.size();
    parts.reserve(nparts);
    for (auto& rp : rank_parts) {
      parts.insert(parts.end(), rp.begin(), rp.end());
      std::vector<Participation>().swap(rp);
    }
    // std::sort with the list's order as the last key instead of std::stable_sort: the same
    // order without stable_sort's buffer of a copy of the list.
    for (size_t i = 0; i < parts.size(); ++i) parts[i].seq = uint32_t(i);
    auto by_rank_init = [](const Participation& a, const Participation& b) {
      return std::tie(a.comm, a.rank, a.init, a.seq) < std::tie(b.comm, b.rank, b.init, b.seq);
    };
    if (!std::is_sorted(parts.begin(), parts.end(), by_rank_init))
      SortTotal(parts, by_rank_init, threads);
    for (size_t e = 0; e < parts.size();) {
      size_t r = e + 1;
      while (r < parts.size() && parts[r].comm == parts[e].comm && parts[r].rank == parts[e].rank)
        ++r;
      all_runs.push_back({parts.data() + e, parts.data() + r});
      e = r;
    }
  }
  // By world rank, in an array: looked up once per participation (10^7 on a 10^8-event trace),
  // serially.
  std::vector<RankWork*> work_of;
  for (const auto& [rank, w] : work)
    if (rank >= 0) {
      if (size_t(rank) >= work_of.size()) work_of.resize(size_t(rank) + 1, nullptr);
      work_of[size_t(rank)] = w;
    }
  // The k-th instance of a communicator is the k-th participation of each of its ranks: per
  // communicator, the ranks' runs are walked side by side (in rank order within an instance),
  // which visits the instances in the order a sort by (communicator, k, rank) would give
  // without sorting all participations a second time.
  std::vector<Run> runs;
  std::vector<const Participation*> group;
  for (size_t b = 0; b < all_runs.size();) {
    const uint32_t comm = all_runs[b].next->comm;
    size_t e = b;
    while (e < all_runs.size() && all_runs[e].next->comm == comm) ++e;
    runs.assign(all_runs.begin() + std::ptrdiff_t(b), all_runs.begin() + std::ptrdiff_t(e));
    const auto c = comms.find(comm);
    const size_t members = c == comms.end() ? SIZE_MAX : c->second.members.size();
    while (!runs.empty()) {
      group.clear();
      size_t kept = 0;
      for (Run& run : runs) {
        group.push_back(run.next);
        if (++run.next < run.end) runs[kept++] = run;
      }
      runs.resize(kept);
      ++out.collective_instances;
      // The last arrival, and the root's arrival for rooted operations.
      double last = -1, root_arrival = -1;
      int32_t last_rank = -1;
      int32_t root = -1;
      for (size_t k = 0; k < group.size() && root < 0; ++k) root = group[k]->root;
      for (const Participation* p : group) {
        if (p->init > last) last = p->init, last_rank = p->rank;
        if (p->rank == root) root_arrival = p->init;
      }
      if (members != SIZE_MAX && group.size() < members) ++out.incomplete_collectives;
      for (const Participation* pp : group) {
        const Participation& p = *pp;
        double until = -1;
        int32_t who = -1;
        if (OneToAll(p.op) && p.root >= 0) {
          if (p.rank != p.root && root_arrival >= 0) until = root_arrival, who = p.root;
        } else if (AllToOne(p.op) && p.root >= 0) {
          if (p.rank == p.root) until = last, who = last_rank;
        } else {
          until = last, who = last_rank;
        }
        RankWork* w =
            p.rank >= 0 && size_t(p.rank) < work_of.size() ? work_of[size_t(p.rank)] : nullptr;
        if (!w || who < 0 || who == p.rank) continue;
        Call& c = w->calls[p.call];
        if (until <= c.start) continue;
        const double u = std::min(until, c.end);
        if (u > c.wait_until) {
          c.wait_until = u;
          c.wait_rank = who;
          c.Set(Call::kWaitSync);
        }
      }
    }
    b = e;
  }
}

// Pass 2: calls and the gaps between them as segments, given to add(start, end, category,
// phase, jump rank) in time order.
template <typename Add>
void CutSegments(const RankWork& w, Add&& add_segment) {
  const RankTimeline& tl = *w.tl;
  size_t mi = 0;          // next phase mark
  size_t fi = 0, ci = 0;  // next entries of w.flush and w.multi
  uint16_t phase = w.marks.empty() ? 0 : w.marks[0].phase;
  Times* site = nullptr;  // the call's call-site times, while its segments are cut
  auto add = [&](double a, double b, Category c, uint16_t ph, int32_t jr = -1) {
    if (b <= a) return;
    if (site) (*site)[c] += b - a;
    add_segment(a, b, c, ph, jr);
  };
  // Computation from a to b, cut where the phase changes.
  auto gap = [&](double a, double b) {
    while (mi < w.marks.size() && w.marks[mi].time <= b) {
      const double m = std::max(a, w.marks[mi].time);
      add(a, m, kComputation, phase);
      a = m;
      phase = w.marks[mi].phase;
      ++mi;
    }
    add(a, b, kComputation, phase);
  };
  double t = tl.start;
  size_t si = 0;  // next entry of w.sites
  for (size_t k = 0; k < w.calls.size(); ++k) {
    const Call& c = w.calls[k];
    double c_flush = 0;
    while (fi < w.flush.size() && w.flush[fi].first < k) ++fi;
    if (fi < w.flush.size() && w.flush[fi].first == k) c_flush = w.flush[fi].second;
    uint32_t c_calls = 1;
    while (ci < w.multi.size() && w.multi[ci].first < k) ++ci;
    if (ci < w.multi.size() && w.multi[ci].first == k) c_calls = w.multi[ci].second;
    const CallSiteOf* cs = nullptr;
    while (si < w.sites.size() && w.sites[si].call < k) ++si;
    if (si < w.sites.size() && w.sites[si].call == k) cs = &w.sites[si];
    const double s = std::max(c.start, t), e = std::min(c.end, tl.end);
    if (e <= s) continue;
    site = nullptr;
    gap(t, s);
    add_segment.calls += c_calls;
    if (cs) site = add_segment.Site(*cs, c_calls);
    double a = s;
    if (c.Has(Call::kCutOff)) {
      // Cut off by an abnormal end (a partner died): waiting until the rank's recording ended,
      // for a partner (p2p, completion) or for the collective's last arrival.
      add(s, e, c.kind == Kind::kCollective ? kSyncWait : kIdle, c.phase);
      t = e;
      continue;
    }
    if (c.wait_until > a && c.wait_rank >= 0) {
      const double u = std::min(c.wait_until, e);
      // the partner arrived at u
      add(a, u, c.Has(Call::kWaitSync) ? kSyncWait : kIdle, c.phase, c.wait_rank);
      a = u;
    }
    const double flush = std::min(c_flush, e - a);
    const double b = e - flush;
    const bool coll_data = c.Has(Call::kCollData);
    Category rest = kUnallocated;
    switch (c.kind) {
      case Kind::kP2p:
      case Kind::kRma:
        rest = kTransfer;
        break;
      case Kind::kCollective:
        rest = coll_data ? kTransfer : kSyncOp;
        break;
      case Kind::kIo:
        rest = kIo;
        break;
      case Kind::kPaused:
        rest = kPaused;
        break;
      default:
        rest = kUnallocated;
    }
    // A completion call (Wait*) finishing a nonblocking collective and no message.
    if (c.Has(Call::kCollDone) && !c.Has(Call::kP2pData) && c.kind == Kind::kP2p)
      rest = coll_data ? kTransfer : kSyncOp;
    add(a, b, rest, c.phase);
    add(b, e, kUnallocated, c.phase);
    t = e;
  }
  site = nullptr;
  gap(t, tl.end);
}

// Counts the segments (to reserve exactly: they are held for every rank until the critical
// path is found).
struct CountSegments {
  size_t n = 0;
  uint64_t calls = 0;
  void operator()(double, double, Category, uint16_t, int32_t) { ++n; }
  // Call sites are summed in the filing pass alone.
  Times* Site(const CallSiteOf&, uint32_t) { return nullptr; }
};

// Files the segments in the rank's compact form (and as Segments when kept) and sums them per
// phase.
struct FileSegments {
  RankTimeline& tl;
  bool keep;
  double prev_end;
  uint64_t calls = 0;
  // The times of the call's call site, which the call's segments are added to.
  Times* Site(const CallSiteOf& s, uint32_t c_calls) {
    RankTimeline::SiteTimes& st = tl.callsites[{s.region, s.callsite}];
    st.calls += c_calls;
    return &st.t;
  }
  void operator()(double a, double b, Category c, uint16_t ph, int32_t jr) {
    CompactSegments& cs = tl.compact;
    if (uint32_t(jr + 1) >= (1u << 27))
      throw std::runtime_error("rank " + std::to_string(jr) + ": ranks beyond 2^27 - 2");
    uint32_t info = uint32_t(c) | (uint32_t(jr + 1) << 5);
    if (a != prev_end) {
      info |= 16u;
      cs.starts.push_back({cs.ends.size(), a});
    }
    cs.ends.push_back(b);
    cs.info.push_back(info);
    prev_end = b;
    if (ph >= tl.phase_times.size()) {
      tl.phase_times.resize(size_t(ph) + 1, Times{});
      tl.phase_first.resize(size_t(ph) + 1, std::numeric_limits<double>::infinity());
      tl.phase_last.resize(size_t(ph) + 1, -std::numeric_limits<double>::infinity());
    }
    tl.phase_times[ph][c] += b - a;
    tl.phase_first[ph] = std::min(tl.phase_first[ph], a);
    tl.phase_last[ph] = std::max(tl.phase_last[ph], b);
    if (keep) {
      Segment s;
      s.start = a;
      s.end = b;
      s.cat = c;
      s.phase = ph;
      s.jump_rank = jr;
      tl.segments.push_back(s);
    }
  }
};

void Segments(RankWork& w, bool keep_segments, size_t nphases) {
  RankTimeline& tl = *w.tl;
  CountSegments count;
  CutSegments(w, count);
  std::vector<Segment>().swap(tl.segments);
  tl.compact = CompactSegments();
  tl.compact.ends.reserve(count.n);
  tl.compact.info.reserve(count.n);
  if (keep_segments) tl.segments.reserve(count.n);
  tl.phase_times.assign(nphases, Times{});
  tl.phase_first.assign(nphases, std::numeric_limits<double>::infinity());
  tl.phase_last.assign(nphases, -std::numeric_limits<double>::infinity());
  tl.callsites.clear();
  FileSegments file{tl, keep_segments, tl.start};
  CutSegments(w, file);
  tl.calls += file.calls;
}

// Gives the heap's free pages back to the system (glibc keeps them resident otherwise): the
// first pass's matching lists and the messages are freed in many small pieces.
void ReturnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// fn(i) for i in [0, n) on `threads` threads (the calling one included), i striped over them.
// Each i writes only its own slots, so the result is that of the loop in order.
template <typename Fn>
void ParallelFor(size_t n, int threads, Fn fn) {
  const size_t k = std::max<size_t>(1, std::min<size_t>(size_t(std::max(threads, 1)), n));
  if (k <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::exception_ptr> errors(k);
  auto run = [&](size_t part) {
    try {
      for (size_t i = part; i < n; i += k) fn(i);
    } catch (...) {
      errors[part] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (size_t p = 1; p < k; ++p) pool.emplace_back(run, p);
  run(0);
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// std::stable_sort's result for a list made of few ascending runs (a location's message ends
// come channel by channel, each channel's in event order): the runs merged pairwise, each
// merge stable, in O(n log runs) instead of O(n log n).
template <typename T, typename Less>
void StableSortRuns(std::vector<T>& v, Less less) {
  using It = typename std::vector<T>::iterator;
  std::vector<It> bounds{v.begin()};
  for (It i = v.begin(); i != v.end();) {
    i = std::is_sorted_until(i, v.end(), less);
    bounds.push_back(i);
    if (bounds.size() > 64 && bounds.size() > v.size() / 64) {  // not a few runs
      std::stable_sort(v.begin(), v.end(), less);
      return;
    }
  }
  while (bounds.size() > 2) {  // bounds.size() - 1 runs
    std::vector<It> next{bounds[0]};
    size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      std::inplace_merge(bounds[k], bounds[k + 1], bounds[k + 2], less);
      next.push_back(bounds[k + 2]);
    }
    if (k + 1 < bounds.size()) next.push_back(bounds.back());
    bounds.swap(next);
  }
}

// A location's event count and first and last timestamps, from its events when in memory.
uint64_t NumEvents(const invmw::otf2::TraceLocation& l) {
  return l.events.empty() ? l.event_count : l.events.size();
}
double FirstTime(const invmw::otf2::TraceLocation& l) {
  return l.events.empty() ? l.first_time : l.events.front().time;
}
double LastTime(const invmw::otf2::TraceLocation& l) {
  return l.events.empty() ? l.last_time : l.events.back().time;
}

}  // namespace

Timelines BuildTimelines(const Trace& t,
                         const std::map<int32_t, std::pair<double, double>>& windows, int threads) {
  TimelineOptions o;
  o.threads = threads;
  return BuildTimelines(t, windows, o);
}

Timelines BuildTimelines(const Trace& t,
                         const std::map<int32_t, std::pair<double, double>>& windows, int threads,
                         const RankEventSource& source) {
  TimelineOptions o;
  o.threads = threads;
  return BuildTimelines(t, windows, o, source);
}

Timelines BuildTimelines(const Trace& t,
                         const std::map<int32_t, std::pair<double, double>>& windows,
                         const TimelineOptions& options) {
  if (t.events_streamed)
    return BuildTimelines(t, windows, options, [&t](int32_t rank, const EventFn& fn) {
      invmw::otf2::StreamRankEvents(t, rank, fn);
    });
  return BuildTimelines(t, windows, options, [&t](int32_t rank, const EventFn& fn) {
    auto it = t.locations_of_rank.find(rank);
    if (it == t.locations_of_rank.end()) return;
    for (size_t l : it->second)
      for (const auto& e : t.locations[l].events) fn(l, e);
  });
}

Timelines BuildTimelines(const Trace& t,
                         const std::map<int32_t, std::pair<double, double>>& windows,
                         const TimelineOptions& options, const RankEventSource& source) {
  if (options.release_messages && options.release_messages != &t.messages)
    throw std::invalid_argument("TimelineOptions::release_messages must be &trace.messages");
  const int threads = options.threads;
  Timelines out;
  std::vector<Kind> kinds;
  kinds.reserve(t.regions.size());
  bool any_pcontrol = false, any_user = false;
  for (const auto& r : t.regions) {
    kinds.push_back(KindOf(r));
    any_pcontrol = any_pcontrol || kinds.back() == Kind::kPcontrol;
    any_user = any_user || kinds.back() == Kind::kUser;
  }
  // Region definitions can exist without calls; phases need actual calls or visits.
  std::vector<int32_t> main_loc;
  for (const auto& [rank, locs] : t.locations_of_rank) {
    if (rank < 0 || locs.empty()) continue;
    size_t best = locs[0];
    for (size_t l : locs)
      if (t.locations[l].id < t.locations[best].id) best = l;
    for (size_t l : locs)
      if (l != best) out.other_thread_events += NumEvents(t.locations[l]);
    main_loc.push_back(int32_t(best));
  }
  // Default windows: the earliest timestamp of the trace to each rank's last sign of life.
  double earliest = std::numeric_limits<double>::infinity();
  std::map<int32_t, double> last_seen;
  for (const auto& l : t.locations)
    if (NumEvents(l) > 0) {
      earliest = std::min(earliest, FirstTime(l));
      last_seen[l.rank] =
          std::max(last_seen.count(l.rank) ? last_seen[l.rank] : -1e300, LastTime(l));
    }
  for (const auto& m : t.metric_locations)
    if (!m.samples.empty()) {
      earliest = std::min(earliest, m.samples.front().time);
      last_seen[m.rank] =
          std::max(last_seen.count(m.rank) ? last_seen[m.rank] : -1e300, m.samples.back().time);
    }
  if (!std::isfinite(earliest)) earliest = 0;
  std::map<int32_t, std::pair<double, double>> sampled;  // first and last own metric sample
  for (const auto& m : t.metric_locations)
    if (m.samples.size() >= 2) sampled[m.rank] = {m.samples.front().time, m.samples.back().time};
  bool used_pcontrol = false, used_user = false;
  if (any_pcontrol || any_user)
    for (int32_t l : main_loc) {
      for (const auto& e : t.locations[l].events)
        if (e.type == TraceEvent::kEnter && e.region < kinds.size()) {
          used_pcontrol = used_pcontrol || kinds[e.region] == Kind::kPcontrol;
          used_user = used_user || kinds[e.region] == Kind::kUser;
        }
      if (t.locations[l].events.empty())
        for (uint32_t r : t.locations[l].regions_entered)
          if (r < kinds.size()) {
            used_pcontrol = used_pcontrol || kinds[r] == Kind::kPcontrol;
            used_user = used_user || kinds[r] == Kind::kUser;
          }
    }
  out.phase_source = used_pcontrol ? PhaseSource::kPcontrol
                     : used_user   ? PhaseSource::kUserRegions
                                   : PhaseSource::kWholeRun;
  PhaseTable phases{&out.phase_names, {}};

  // The partners of the send/receive events on the analysed locations, by event index: all the
  // scan needs of the messages (16 bytes per message end instead of 88 per message), so the
  // messages can be released before the scan. Reserved exactly: counted first.
  std::vector<char> analysed(t.locations.size(), 0);
  for (int32_t l : main_loc) analysed[size_t(l)] = 1;
  std::vector<std::vector<PartnerEnd>> partners(t.locations.size());
  {
    // Filled on the threads, each over a share of the messages at offsets counted first: the
    // lists are those of one walk in message order (the first error is that of the earliest
    // message, as in one walk: each share stops at its first, and they are rethrown in order).
    const size_t nloc = t.locations.size(), nmsg = t.messages.size();
    const size_t shares = nmsg >= (size_t(1) << 16) ? size_t(std::max(threads, 1)) : 1;
    std::vector<std::vector<size_t>> at(shares, std::vector<size_t>(nloc, 0));
    auto share = [&](size_t c) {
      return std::make_pair(nmsg * c / shares, nmsg * (c + 1) / shares);
    };
    ParallelFor(shares, int(shares), [&](size_t c) {
      auto& count = at[c];
      for (size_t m = share(c).first; m < share(c).second; ++m) {
        const auto& msg = t.messages[m];
        if (msg.send_loc < nloc && analysed[msg.send_loc]) ++count[msg.send_loc];
        if (msg.recv_loc < nloc && analysed[msg.recv_loc]) ++count[msg.recv_loc];
      }
    });
    std::vector<size_t> total(nloc, 0);
    for (size_t l = 0; l < nloc; ++l)
      for (size_t c = 0; c < shares; ++c) {
        const size_t n = at[c][l];
        at[c][l] = total[l];
        total[l] += n;
      }
    ParallelFor(nloc, threads, [&](size_t l) { partners[l].resize(total[l]); });
    ParallelFor(shares, int(shares), [&](size_t c) {
      auto& next = at[c];
      for (size_t m = share(c).first; m < share(c).second; ++m) {
        const auto& msg = t.messages[m];
        if (msg.send_loc < nloc && analysed[msg.send_loc])
          partners[msg.send_loc][next[msg.send_loc]++] =
              PartnerEnd::Make(msg.send_event, msg.recv_post_time, msg.dst);
        if (msg.recv_loc < nloc && analysed[msg.recv_loc])
          partners[msg.recv_loc][next[msg.recv_loc]++] =
              PartnerEnd::Make(msg.recv_event, msg.send_time, msg.src);
      }
    });
  }
  // An event is the end of at most one message; the stable order keeps the first, as the
  // lookup by message index did. Each location's list apart, so on the threads.
  ParallelFor(partners.size(), threads, [&](size_t l) {
    StableSortRuns(partners[l],
                   [](const PartnerEnd& a, const PartnerEnd& b) { return a.event() < b.event(); });
  });
  if (options.release_messages) {
    std::vector<invmw::otf2::Message>().swap(*options.release_messages);
    ReturnFreedMemory();
  }

  out.ranks.resize(main_loc.size());
  std::vector<RankWork> work(main_loc.size());
  std::map<int32_t, RankWork*> by_rank;
  // Ranks are scanned on several threads only when the whole run is one phase: phases found
  // in user regions or MPI_Pcontrol calls are numbered in the order the scan meets them.
  // Each rank's collective participations go to its own list; joined in rank order they are
  // the list one thread would have built.
  const bool parallel_scan = out.phase_source == PhaseSource::kWholeRun && threads > 1;
  if (parallel_scan) phases.Get("run");  // present before the threads only look it up
  std::vector<std::vector<Participation>> rank_parts(main_loc.size());
  std::vector<std::pair<double, double>> rank_window(main_loc.size());
  for (size_t i = 0; i < main_loc.size(); ++i) {
    out.ranks[i].rank = t.locations[main_loc[i]].rank;
    out.ranks[i].location = size_t(main_loc[i]);
    work[i].tl = &out.ranks[i];
    out.events += NumEvents(t.locations[main_loc[i]]);
    const int32_t rank = out.ranks[i].rank;
    double start = earliest, end = last_seen.count(rank) ? last_seen[rank] : earliest;
    if (auto it = sampled.find(rank); it != sampled.end()) {
      // The sampler starts as MPI_Init returns and takes its last sample as MPI_Finalize begins.
      start = it->second.first;
      end = std::max(it->second.second, end);
    } else if (auto jt = windows.find(rank); jt != windows.end()) {
      start = jt->second.first;
      if (jt->second.second >= 0) end = jt->second.second;
    }
    rank_window[i] = {start, end};
    by_rank[out.ranks[i].rank] = &work[i];
  }
  // Each rank's events are read (or streamed) and scanned on one thread; ranks in order when
  // the scan is sequential.
  ParallelFor(main_loc.size(), parallel_scan ? threads : 1, [&](size_t i) {
    const size_t loc = size_t(main_loc[i]);
    LocationScanner scan(t, kinds, partners[loc], out.phase_source, phases, work[i], rank_parts[i]);
    // A call takes an Enter and a Leave: a large location's list is reserved for the most calls
    // it can hold, so it is never copied while it grows (doubling would hold it twice, and
    // trimming it after would copy it again). Only from 32 MiB on: glibc maps such requests
    // apart from the heap, and their pages never written are not resident, so only the calls
    // there cost memory; a smaller reservation would come out of the heap's pages freed by the
    // first pass, and those are resident. Capped at 2^24 calls (768 MiB of address space):
    // beyond it the list grows as vectors do.
    const size_t most = size_t(std::min<uint64_t>(NumEvents(t.locations[loc]) / 2, 1u << 24));
    const bool reserved = most * sizeof(Call) >= (size_t(32) << 20);
    if (reserved) {
      work[i].calls.reserve(most);
      rank_parts[i].reserve(most);  // a collective takes two events at least
    }
    scan.Begin(rank_window[i].first, rank_window[i].second);
    source(out.ranks[i].rank, [&](size_t l, const TraceEvent& e) {
      if (l == loc) scan.Feed(e);
    });
    scan.Finish();
    // Kept for all ranks until the collectives are matched.
    if (!reserved) work[i].calls.shrink_to_fit();
    std::vector<PartnerEnd>().swap(partners[loc]);
  });
  MatchCollectives(t.comms, rank_parts, by_rank, out, threads);
  std::vector<std::vector<Participation>>().swap(rank_parts);
  int32_t max_rank = 0;
  for (const auto& r : out.ranks) max_rank = std::max(max_rank, r.rank);
  out.wait_caused.assign(size_t(max_rank) + 1, 0.0);
  const size_t nphases = out.phase_names.size();
  ParallelFor(work.size(), threads, [&](size_t i) {
    Segments(work[i], options.keep_segments, nphases);
    // The segments say it all now.
    std::vector<Call>().swap(work[i].calls);
    std::vector<std::pair<uint32_t, double>>().swap(work[i].flush);
    std::vector<std::pair<uint32_t, uint32_t>>().swap(work[i].multi);
    std::vector<CallSiteOf>().swap(work[i].sites);
  });
  for (auto& w : work) {
    const RankTimeline& r = *w.tl;
    const CompactSegments& cs = r.compact;
    for (size_t k = 0; k < cs.size(); ++k) {
      const int32_t jr = cs.jump_rank(k);
      if (jr >= 0 && jr <= max_rank) out.wait_caused[jr] += cs.ends[k] - cs.start(k, r.start);
    }
  }
  return out;
}

}  // namespace invmw::analysis
