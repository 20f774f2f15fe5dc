// Conversion of a Trace to SimGrid TI actions; the rules are in ti_convert.h and
// docs/fitter.md "Trace replay".
#include "replay/ti_convert.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "fitter/file_io.h"

namespace invmw::replay {
namespace {

using otf2::TraceEvent;

// OTF2_CollectiveOp values (OTF2_Events.h); kept here so that this part needs no OTF2 header.
enum : uint32_t {
  kBarrier = 0,
  kBcast = 1,
  kGather = 2,
  kGatherv = 3,
  kScatter = 4,
  kScatterv = 5,
  kAllgather = 6,
  kAllgatherv = 7,
  kAlltoall = 8,
  kAlltoallv = 9,
  kAlltoallw = 10,
  kAllreduce = 11,
  kReduce = 12,
  kReduceScatter = 13,
  kScan = 14,
  kExscan = 15,
  kReduceScatterBlock = 16,
};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}
std::string Num(uint64_t v) {
  return std::to_string(v);
}

bool IsWorld(const otf2::Trace& t, uint32_t comm, int ranks) {
  auto it = t.comms.find(comm);
  if (it == t.comms.end()) return false;
  const auto& m = it->second.members;
  if (static_cast<int>(m.size()) != ranks) return false;
  for (int i = 0; i < ranks; ++i)
    if (m[i] != i) return false;
  return true;
}

struct Pending {  // an irecv posted, filled in from its completion
  int32_t peer = -1;
  uint32_t tag = 0;
  uint64_t bytes = 0;
  bool completed = false;
};

// Per operation and rank, its instances on MPI_COMM_WORLD in order: the v-collectives need
// every rank's count, which only that rank's own events carry. Indexed [op][rank][k].
using VCollectives = std::map<uint32_t, std::vector<std::vector<const TraceEvent*>>>;

bool IsVCollective(const TraceEvent& e) {
  return (e.type == TraceEvent::kMpiCollectiveEnd ||
          e.type == TraceEvent::kNonBlockingCollectiveComplete) &&
         (e.coll_op == kGatherv || e.coll_op == kAllgatherv || e.coll_op == kScatterv ||
          e.coll_op == kAlltoallv || e.coll_op == kAlltoallw || e.coll_op == kReduceScatter ||
          e.coll_op == kReduceScatterBlock);
}

class RankConverter {
 public:
  RankConverter(const otf2::Trace& t, int rank, int ranks, double speed,
                std::map<std::string, Unexpressed>* unexpressed, const VCollectives* vcoll,
                int64_t tag_base)
      : t_(t),
        rank_(rank),
        ranks_(ranks),
        speed_(speed),
        unexpressed_(unexpressed),
        vcoll_(vcoll),
        tag_base_(tag_base) {}

  // start_delay: how much later than the first rank this rank left MPI_Init.
  void Run(const std::vector<TraceEvent>& ev, double start_delay, std::vector<std::string>* out,
           double* flops) {
    out_ = out;
    // Irecv sizes and sources are known only at completion; SimGrid wants them at the post.
    std::unordered_map<uint64_t, size_t> open;  // request -> index into posts
    std::vector<size_t> post_of(ev.size(), SIZE_MAX);
    for (size_t i = 0; i < ev.size(); ++i) {
      const TraceEvent& e = ev[i];
      if (e.type == TraceEvent::kMpiIrecvRequest) {
        open[e.request] = posts_.size();
        post_of[i] = posts_.size();
        posts_.push_back({});
      } else if (e.type == TraceEvent::kMpiIrecv) {
        auto it = open.find(e.request);
        if (it == open.end()) continue;
        Pending& p = posts_[it->second];
        p.peer = e.peer;
        p.tag = e.tag;
        p.bytes = e.bytes;
        p.completed = true;
        open.erase(it);
      } else if (e.type == TraceEvent::kMpiRequestCancelled) {
        open.erase(e.request);
      }
    }

    out->push_back("init");
    // The measured wall starts at the first rank's MPI_Init leave, the replay with every rank
    // at 0: a rank that left MPI_Init later (launch skew, ~1 ms on the emulated platforms)
    // starts later by a sleep, which no target speed scales.
    if (start_delay > 0) out->push_back("sleep " + Num(start_delay));
    double burst_start = -1;  // end of the last MPI call (the first: none yet)
    int depth = 0;
    size_t call_begin = 0;
    for (size_t i = 0; i < ev.size(); ++i) {
      const TraceEvent& e = ev[i];
      if (e.type == TraceEvent::kEnter && IsMpi(e.region)) {
        if (depth++ == 0) {
          if (burst_start >= 0 && e.time > burst_start) Compute(e.time - burst_start, flops);
          call_begin = i;
        }
      } else if (e.type == TraceEvent::kLeave && IsMpi(e.region) && depth > 0) {
        if (--depth == 0) {
          Call(ev, call_begin, i, post_of);
          burst_start = e.time;
        }
      }
    }
    out->push_back("finalize");
  }

 private:
  bool IsMpi(uint32_t region) const {
    return region < t_.regions.size() && t_.regions[region].name.compare(0, 4, "MPI_") == 0;
  }

  void Compute(double seconds, double* flops) {
    double f = seconds * speed_;
    if (!(f > 0)) return;
    *flops += f;
    out_->push_back("compute " + Num(f));
  }

  void Unexpress(const std::string& what, const TraceEvent& enter, double time) {
    Unexpressed& u = (*unexpressed_)[what];
    u.function = what;
    u.calls += enter.calls;
    u.time_s += time;
  }

  // One MPI call, events [b, e] (Enter .. Leave).
  void Call(const std::vector<TraceEvent>& ev, size_t b, size_t e,
            const std::vector<size_t>& post_of) {
    const std::string& name = t_.regions[ev[b].region].name;
    const double time = ev[e].time - ev[b].time;
    // Sendrecv: a blocking send before the receive deadlocks when both partners send large
    // messages first; MPI gives the pair concurrency, so isend + recv + wait.
    const bool sendrecv = name.compare(0, 12, "MPI_Sendrecv") == 0;
    std::vector<std::string> waits_after;
    std::string problem;
    const size_t before = out_->size();
    for (size_t i = b + 1; i < e; ++i) {
      const TraceEvent& x = ev[i];
      const std::string me = std::to_string(rank_);
      switch (x.type) {
        case TraceEvent::kMpiSend:
          if (sendrecv) {
            out_->push_back("isend " + Num(uint64_t(x.peer)) + " " + Num(uint64_t(x.tag)) + " " +
                            Num(x.bytes));
            waits_after.push_back("wait " + me + " " + Num(uint64_t(x.peer)) + " " +
                                  Num(uint64_t(x.tag)));
          } else {
            out_->push_back("send " + Num(uint64_t(x.peer)) + " " + Num(uint64_t(x.tag)) + " " +
                            Num(x.bytes));
          }
          break;
        case TraceEvent::kMpiIsend:
          out_->push_back("isend " + Num(uint64_t(x.peer)) + " " + Num(uint64_t(x.tag)) + " " +
                          Num(x.bytes));
          isends_[x.request] = {x.peer, x.tag, x.bytes, false};
          break;
        case TraceEvent::kMpiIsendComplete: {
          auto it = isends_.find(x.request);
          if (it == isends_.end()) break;  // started before the trace: nothing to wait for
          out_->push_back("wait " + me + " " + Num(uint64_t(it->second.peer)) + " " +
                          Num(uint64_t(it->second.tag)));
          isends_.erase(it);
          break;
        }
        case TraceEvent::kMpiIrecvRequest: {
          const Pending& p = posts_[post_of[i]];
          if (!p.completed) {
            problem = name + " (receive never completed)";
            break;
          }
          out_->push_back("irecv " + Num(uint64_t(p.peer)) + " " + Num(uint64_t(p.tag)) + " " +
                          Num(p.bytes));
          break;
        }
        case TraceEvent::kMpiIrecv:
          if (x.peer >= 0)
            out_->push_back("wait " + Num(uint64_t(x.peer)) + " " + me + " " +
                            Num(uint64_t(x.tag)));
          break;
        case TraceEvent::kMpiRecv:
          if (x.peer < 0) {
            problem = name + " (no source)";
            break;
          }
          out_->push_back("recv " + Num(uint64_t(x.peer)) + " " + Num(uint64_t(x.tag)) + " " +
                          Num(x.bytes));
          break;
        case TraceEvent::kMpiCollectiveEnd:
          Collective(name, x, &problem);
          break;
        case TraceEvent::kNonBlockingCollectiveRequest:
          // The collective is replayed where it completes; its start's name tells a
          // neighbourhood collective from the one whose operation code it shares.
          started_by_[x.request] = name;
          break;
        case TraceEvent::kNonBlockingCollectiveComplete: {
          // Replay has no ibarrier/ibcast/...: the blocking form at the call that completes
          // it (the overlap with the computation in between is not replayed).
          auto it = started_by_.find(x.request);
          const std::string started = it != started_by_.end() ? it->second : std::string();
          if (it != started_by_.end()) started_by_.erase(it);
          Collective(name + " (completing " +
                         (started.empty() ? "a nonblocking collective" : started) + ")",
                     x, &problem);
          break;
        }
        default:
          break;
      }
    }
    for (auto& w : waits_after) out_->push_back(std::move(w));
    if (!problem.empty()) {
      // The call's expressible part stays (its partners expect it); the rest is listed.
      Unexpress(problem, ev[b], time);
    } else if (out_->size() == before && Blocking(name)) {
      // A blocking call that left no event (a probe, a wait on a null request) is timed in
      // the trace but has no action: listed so that its time is not silently lost.
      Unexpress(name, ev[b], time);
    }
  }

  // Calls that may block for other ranks; local calls (Comm_rank, Wtime, Test, Iprobe ...)
  // without events take no time worth listing.
  static bool Blocking(const std::string& name) {
    return name == "MPI_Probe" || name == "MPI_Mprobe";
  }

  void Collective(const std::string& name, const TraceEvent& x, std::string* problem) {
    if (!IsWorld(t_, x.comm, ranks_)) {
      *problem = name + " (not on MPI_COMM_WORLD)";
      return;
    }
    // SimGrid's collectives need the same count on every rank; the trace has each rank's bytes
    // sent and received (MPI_IN_PLACE sides 0, root-only sides only at the root), so the count
    // is read from the side every rank has.
    const uint64_t n = static_cast<uint64_t>(ranks_);
    const bool is_root = x.peer == rank_;
    const uint64_t either = std::max(x.bytes, x.bytes_recv);
    const std::string root = Num(uint64_t(x.peer < 0 ? 0 : x.peer));
    switch (x.coll_op) {
      case kBarrier:
        out_->push_back("barrier");
        return;
      case kBcast:
        out_->push_back("bcast " + Num(either) + " " + root);
        return;
      case kReduce:
        out_->push_back("reduce " + Num(either) + " 0 " + root);
        return;
      case kAllreduce:
        out_->push_back("allreduce " + Num(either) + " 0");
        return;
      case kAlltoall:
        out_->push_back("alltoall " + Num(either / n) + " " + Num(either / n));
        return;
      case kAllgather:
        out_->push_back("allgather " + Num(x.bytes_recv / n) + " " + Num(x.bytes_recv / n));
        return;
      case kGather: {
        const uint64_t each = is_root ? x.bytes_recv / n : x.bytes;
        out_->push_back("gather " + Num(each) + " " + Num(each) + " " + root);
        return;
      }
      case kScatter: {
        const uint64_t each = is_root ? x.bytes / n : x.bytes_recv;
        out_->push_back("scatter " + Num(each) + " " + Num(each) + " " + root);
        return;
      }
      case kGatherv:
      case kAllgatherv:
        VCollective(name, x, problem);
        return;
      case kScan:
      case kExscan:
        ScanChain(name, x, either, problem);
        return;
      case kScatterv:
      case kAlltoallv:
      case kAlltoallw:
      case kReduceScatter:
      case kReduceScatterBlock:
        // Neighbourhood collectives share the Alltoallv/w operation codes (their communicator
        // may well hold every rank): only the names below are what the rewrites assume.
        if (x.coll_op == kAlltoallv || x.coll_op == kAlltoallw) {
          if (name.find("eighbor") != std::string::npos) {
            *problem = name;
            return;
          }
        }
        PointToPointRewrite(name, x, problem);
        return;
      default:
        *problem = name;
    }
  }

  // The k-th instance of x's operation on every rank, or empty (with *problem set) when the
  // ranks' instances do not line up.
  std::vector<const TraceEvent*> Instance(const std::string& name, const TraceEvent& x,
                                          std::string* problem) {
    const size_t k = vk_[x.coll_op]++;
    std::vector<const TraceEvent*> inst;
    auto it = vcoll_->find(x.coll_op);
    for (int i = 0; it != vcoll_->end() && i < ranks_; ++i) {
      const auto& v = it->second[i];
      if (k >= v.size() || v[k]->peer != x.peer) break;
      inst.push_back(v[k]);
    }
    if (static_cast<int>(inst.size()) != ranks_) {
      *problem = name + " (instances differ across ranks)";
      inst.clear();
    }
    return inst;
  }

  // A reserved tag per rewritten operation: above every tag the application used (trace-wide),
  // so that a rewrite's messages never match the application's own.
  bool Tag(uint32_t op, std::string* tag, std::string* problem) {
    if (tag_base_ < 0 || tag_base_ + op > 0x7fffffff) {
      *problem = "(no tag left above the application's for the rewrite)";
      return false;
    }
    *tag = Num(uint64_t(tag_base_ + op));
    return true;
  }

  // Scan / Exscan (no replay action): the linear chain of Open MPI's basic component, rank r
  // receives the prefix from r - 1 and sends its own to r + 1, each `bytes` long.
  void ScanChain(const std::string& name, const TraceEvent& x, uint64_t bytes,
                 std::string* problem) {
    std::string tag, why;
    if (!Tag(x.coll_op, &tag, &why)) {
      *problem = name + " " + why;
      return;
    }
    if (rank_ > 0)
      out_->push_back("recv " + Num(uint64_t(rank_ - 1)) + " " + tag + " " + Num(bytes));
    if (rank_ + 1 < ranks_)
      out_->push_back("send " + Num(uint64_t(rank_ + 1)) + " " + tag + " " + Num(bytes));
  }

  // Scatterv, Reduce_scatter(_block), Alltoallv/w as point-to-point messages with a reserved
  // tag (SimGrid 3.32's scatterv/reducescatter/alltoallv actions are not used: their parsers
  // mis-size the count arrays). Counts per pair come from every rank's own event of the same
  // instance:
  //  - Scatterv: the root sends rank i what rank i received (the root's own part stays local),
  //    one blocking send after the other, as a linear scatterv does.
  //  - Reduce_scatter: a reduce of the total to rank 0, then rank 0 sends rank i its part.
  //  - Alltoallv/w: the trace has each rank's totals sent S_i and received R_j, not the matrix;
  //    the pair (i, j) gets floor(S_i R_j / T), T = sum S (the matrix of largest entropy with
  //    those margins), exchanged pairwise (step k: isend to r + k, recv from r - k, wait), so
  //    that both sides compute the same count.
  void PointToPointRewrite(const std::string& name, const TraceEvent& x, std::string* problem) {
    std::vector<const TraceEvent*> inst = Instance(name, x, problem);
    if (inst.empty()) return;
    std::string tag, why;
    if (!Tag(x.coll_op, &tag, &why)) {
      *problem = name + " " + why;
      return;
    }
    const std::string me = Num(uint64_t(rank_));
    auto send = [&](int to, uint64_t bytes) {
      out_->push_back("send " + Num(uint64_t(to)) + " " + tag + " " + Num(bytes));
    };
    auto recv = [&](int from, uint64_t bytes) {
      out_->push_back("recv " + Num(uint64_t(from)) + " " + tag + " " + Num(bytes));
    };
    if (x.coll_op == kScatterv || x.coll_op == kReduceScatter || x.coll_op == kReduceScatterBlock) {
      const bool scatterv = x.coll_op == kScatterv;
      const int root = scatterv ? x.peer : 0;
      if (root < 0 || root >= ranks_) {
        *problem = name + " (no root)";
        return;
      }
      if (!scatterv) {
        // Total reduced: what any rank sent (MPI_IN_PLACE ranks sent 0), else the parts' sum.
        uint64_t total = 0, parts = 0;
        for (const TraceEvent* e : inst) total = std::max(total, e->bytes), parts += e->bytes_recv;
        out_->push_back("reduce " + Num(std::max(total, parts)) + " 0 0");
      }
      if (rank_ == root) {
        for (int i = 0; i < ranks_; ++i)
          if (i != root && inst[i]->bytes_recv > 0) send(i, inst[i]->bytes_recv);
      } else if (x.bytes_recv > 0) {
        recv(root, x.bytes_recv);
      }
      return;
    }
    // Alltoallv / Alltoallw. An MPI_IN_PLACE rank (sent 0) sends what it receives.
    std::vector<long double> s(ranks_), r(ranks_);
    long double total = 0;
    for (int i = 0; i < ranks_; ++i) {
      r[i] = inst[i]->bytes_recv;
      s[i] = inst[i]->bytes > 0 ? inst[i]->bytes : inst[i]->bytes_recv;
      total += s[i];
    }
    if (!(total > 0)) return;
    auto pair = [&](int from, int to) {
      return static_cast<uint64_t>(std::floor(s[from] * r[to] / total));
    };
    for (int k = 1; k < ranks_; ++k) {
      const int to = (rank_ + k) % ranks_, from = (rank_ + ranks_ - k) % ranks_;
      const uint64_t out = pair(rank_, to), in = pair(from, rank_);
      if (out > 0) out_->push_back("isend " + Num(uint64_t(to)) + " " + tag + " " + Num(out));
      if (in > 0) recv(from, in);
      if (out > 0) out_->push_back("wait " + me + " " + Num(uint64_t(to)) + " " + tag);
    }
  }

  // gatherv SEND C0 .. CN-1 ROOT / allgatherv SEND C0 .. CN-1: Ci is what rank i sent in the
  // same (k-th) instance; an MPI_IN_PLACE rank (sent 0) contributed its received total minus
  // the others' (gatherv: the root). Instances that do not line up across ranks are listed.
  void VCollective(const std::string& name, const TraceEvent& x, std::string* problem) {
    std::vector<const TraceEvent*> inst = Instance(name, x, problem);
    if (inst.empty()) return;
    std::vector<uint64_t> counts(ranks_);
    uint64_t others = 0;
    int in_place = -1;
    for (int i = 0; i < ranks_; ++i) {
      counts[i] = inst[i]->bytes;
      if (counts[i] == 0 && in_place < 0 && inst[i]->bytes_recv > 0)
        in_place = i;
      else
        others += counts[i];
    }
    if (in_place >= 0) {
      const uint64_t total = inst[in_place]->bytes_recv;
      if (total < others) {
        *problem = name + " (counts not recoverable)";
        return;
      }
      counts[in_place] = total - others;
    }
    std::string line = x.coll_op == kGatherv ? "gatherv " : "allgatherv ";
    line += Num(counts[rank_]);
    for (uint64_t c : counts) line += " " + Num(c);
    if (x.coll_op == kGatherv) line += " " + Num(uint64_t(x.peer < 0 ? 0 : x.peer));
    out_->push_back(line);
  }

  const otf2::Trace& t_;
  int rank_, ranks_;
  double speed_;
  std::map<std::string, Unexpressed>* unexpressed_;
  std::vector<std::string>* out_ = nullptr;
  std::vector<Pending> posts_;
  std::unordered_map<uint64_t, Pending> isends_;
  std::unordered_map<uint64_t, std::string> started_by_;  // nonblocking collective -> its start
  const VCollectives* vcoll_;
  std::map<uint32_t, size_t> vk_;  // instances of each v-collective seen so far
  int64_t tag_base_;
};

}  // namespace

Conversion ConvertTrace(const otf2::Trace& trace, const ConvertOptions& options) {
  Conversion c;
  if (trace.locations_of_rank.empty())
    throw std::runtime_error(trace.path + ": the trace has no ranks");
  c.ranks = static_cast<int>(trace.locations_of_rank.size());
  for (int r = 0; r < c.ranks; ++r)
    if (!trace.locations_of_rank.count(r))
      throw std::runtime_error(trace.path + ": rank " + std::to_string(r) +
                               " is missing (ranks must be 0.." + std::to_string(c.ranks - 1) +
                               ")");
  // The replay simulates what lies between MPI_Init and MPI_Finalize: measured alike.
  double first = INFINITY, last = -INFINITY;
  std::map<int, double> start_of;
  for (const auto& [rank, locs] : trace.locations_of_rank) {
    const auto& ev = trace.locations[locs.front()].events;
    if (ev.empty()) continue;
    double start = ev.front().time, end = ev.back().time;
    for (const auto& e : ev) {
      if (e.region >= trace.regions.size()) continue;
      const std::string& n = trace.regions[e.region].name;
      if (e.type == TraceEvent::kLeave && n.compare(0, 8, "MPI_Init") == 0) start = e.time;
      if (e.type == TraceEvent::kEnter && n == "MPI_Finalize") end = e.time;
    }
    start_of[rank] = start;
    first = std::min(first, start);
    last = std::max(last, end);
  }
  c.measured_wall_s = last > first ? last - first : 0;
  const double speed = options.measured_speed_flops > 0 ? options.measured_speed_flops : 1;
  std::map<std::string, Unexpressed> unexpressed;
  c.actions.resize(c.ranks);
  c.flops.assign(c.ranks, 0);
  VCollectives vcoll;
  uint64_t max_tag = 0;
  for (int r = 0; r < c.ranks; ++r)
    for (const auto& e : trace.locations[trace.locations_of_rank.at(r).front()].events) {
      if (IsVCollective(e) && IsWorld(trace, e.comm, c.ranks)) {
        auto& per_rank = vcoll[e.coll_op];
        per_rank.resize(c.ranks);
        per_rank[r].push_back(&e);
      }
      if (e.type == TraceEvent::kMpiSend || e.type == TraceEvent::kMpiIsend ||
          e.type == TraceEvent::kMpiRecv || e.type == TraceEvent::kMpiIrecv)
        max_tag = std::max<uint64_t>(max_tag, e.tag);
    }
  // The rewrites' tags (one per operation code, < 32) lie above every application tag.
  const int64_t tag_base = max_tag < 0x7fffffffu - 32 ? int64_t(max_tag) + 1 : -1;
  for (int r = 0; r < c.ranks; ++r) {
    // The rank's first location is its main thread, the one that calls MPI (MPI_THREAD_FUNNELED
    // and below); other threads' calls are not replayed.
    const auto& loc = trace.locations[trace.locations_of_rank.at(r).front()];
    if (loc.events.empty())
      throw std::runtime_error(trace.path + ": rank " + std::to_string(r) + " has no events");
    c.events += loc.events.size();
    RankConverter(trace, r, c.ranks, speed, &unexpressed, &vcoll, tag_base)
        .Run(loc.events, start_of.count(r) ? start_of[r] - first : 0, &c.actions[r], &c.flops[r]);
    // MPI calls of the rank's other threads have no place in a one-actor-per-rank replay:
    // listed, not dropped.
    const auto& locs = trace.locations_of_rank.at(r);
    for (size_t k = 1; k < locs.size(); ++k) {
      const auto& ev = trace.locations[locs[k]].events;
      c.events += ev.size();
      int depth = 0;
      size_t begin = 0;
      for (size_t i = 0; i < ev.size(); ++i) {
        const TraceEvent& e = ev[i];
        if (e.region >= trace.regions.size() ||
            trace.regions[e.region].name.compare(0, 4, "MPI_") != 0)
          continue;
        if (e.type == TraceEvent::kEnter && depth++ == 0) begin = i;
        if (e.type == TraceEvent::kLeave && depth > 0 && --depth == 0) {
          const std::string what = trace.regions[e.region].name + " (not the rank's first thread)";
          Unexpressed& u = unexpressed[what];
          u.function = what;
          u.calls += ev[begin].calls;
          u.time_s += e.time - ev[begin].time;
        }
      }
    }
  }
  for (auto& [name, u] : unexpressed) {
    u.share = c.measured_wall_s > 0 ? u.time_s / (c.ranks * c.measured_wall_s) : 0;
    c.unexpressed.push_back(u);
  }
  std::sort(c.unexpressed.begin(), c.unexpressed.end(),
            [](const Unexpressed& a, const Unexpressed& b) { return a.time_s > b.time_s; });
  return c;
}

std::string WriteTiTraces(const Conversion& c, const std::string& dir) {
  std::string index;
  for (int r = 0; r < c.ranks; ++r) {
    std::string text;
    const std::string prefix = std::to_string(r) + " ";
    for (const auto& a : c.actions[r]) text += prefix + a + "\n";
    const std::string name = dir + "/rank-" + std::to_string(r) + ".txt";
    fit::WriteFileAtomic(name, text);
    index += name + "\n";
  }
  const std::string path = dir + "/index.txt";
  fit::WriteFileAtomic(path, index);
  return path;
}

}  // namespace invmw::replay
