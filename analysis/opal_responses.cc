// Opal's response variables (contract B) from the inverse mapping of an opal-mini run.
//
// The rule, which needs neither barriers nor any knowledge of opal-mini's code:
// 1. Rounds. For each server s, the client's messages to s in the order they were sent are its
//    requests; the reply to request k is the first message from s to the client sent after s
//    received request k. The server's computation for round k is its computation time between
//    receiving the request and starting the reply. Round k of every server is the same call
//    (the client sends one request per server and call); servers with fewer rounds limit the
//    count.
// 2. Steps. Opal's update call is answered by empty messages, its energy call by energies and
//    gradients; a step ends with the first round whose replies carry data. If no reply or every
//    reply carries data, every round is a step.
// 3. t_par_comp = sum over steps of the largest server computation in the step (per server, its
//    rounds of the step added up): the servers' share of the critical path.
// 4. The client's step window runs from its first request, moved back over the synchronisation
//    right before it (the barrier opening the first call, and the client's bookkeeping between
//    the two), to the last reply, moved forward over what follows until the first transfer,
//    idle or I/O segment or the end of the window (the closing barrier and the last step's
//    sequential work). In that window, on the client: t_seq_comp = computation, t_comm =
//    transfer, t_wall = the window's length.
// 5. The client's waiting (idle + sync_wait) is, on the critical path, mostly the servers'
//    computation, already counted in t_par_comp; with barriers that wait is in the closing
//    barrier. t_sync = sync_op + the barrier waiting t_par_comp does not explain (sync_wait -
//    min(sync_wait, t_par_comp)), as opal-mini's timers count it; t_idle = t_wall - (t_par_comp
//    + t_seq_comp + t_comm + t_sync), at least 0. The client's raw waiting is reported as t_wait.
// 5a. (docs/analysis.md: rule 6) Sends that returned before their receive completed (eager or
//    socket-buffered: Open MPI's TCP sends under the eager limit, SMPI's detached sends) are
//    counted as if the client had blocked until delivery, as the model's t_comm (every message
//    serialised on the client) and a rendezvous send have it: the client's waiting (sync_wait,
//    idle) that overlaps a request in flight, from the later of the send's start and the receive's
//    post to the receive's completion, is t_comm; its waiting from the send's start to a late
//    receiver's post (and no request in flight) is idle. The transfer moved to t_comm is
//    t_comm_after_return. Without this the wire time of eager requests was the client's
//    barrier wait, i.e. t_sync (issue 20, item 4).
// 6. Structure. The rule is refused (an error saying what is missing), not bent, when the run
//    lacks it: servers that exchange point-to-point messages with each other, a server message
//    to the client that answers no request after the first, a request that arrives before the
//    previous reply left, or a parallel computation longer than the client's window.
#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "analysis/analysis.h"

namespace invmw::analysis {

namespace {

// Computation shorter than this between two MPI calls of the client is bookkeeping.
constexpr double kBookkeepingS = 50e-6;

double ComputationIn(const RankTimeline& r, double a, double b) {
  const auto& segs = r.segments;
  auto it = std::lower_bound(segs.begin(), segs.end(), a,
                             [](const Segment& s, double v) { return s.end <= v; });
  double sum = 0;
  for (; it != segs.end() && it->start < b; ++it)
    if (it->cat == kComputation)
      sum += std::max(0.0, std::min(b, it->end) - std::max(a, it->start));
  return sum;
}

// Sorted, disjoint union of intervals.
std::vector<std::pair<double, double>> Union(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& x : v) {
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

// a minus b, both sorted and disjoint.
std::vector<std::pair<double, double>> Subtract(const std::vector<std::pair<double, double>>& a,
                                                const std::vector<std::pair<double, double>>& b) {
  std::vector<std::pair<double, double>> out;
  size_t j = 0;
  for (auto x : a) {
    while (j < b.size() && b[j].second <= x.first) ++j;
    for (size_t k = j; k < b.size() && b[k].first < x.second; ++k) {
      if (b[k].first > x.first) out.push_back({x.first, b[k].first});
      x.first = std::max(x.first, b[k].second);
    }
    if (x.second > x.first) out.push_back(x);
  }
  return out;
}

// Length of [a, b] covered by sorted, disjoint intervals.
double Overlap(const std::vector<std::pair<double, double>>& v, double a, double b) {
  auto it =
      std::lower_bound(v.begin(), v.end(), a,
                       [](const std::pair<double, double>& x, double t) { return x.second <= t; });
  double sum = 0;
  for (; it != v.end() && it->first < b; ++it)
    sum += std::max(0.0, std::min(b, it->second) - std::max(a, it->first));
  return sum;
}

}  // namespace

OpalBreakdown AnalyzeOpal(const Analysis& a) {
  // An analysis made without AnalyzeOptions::keep_details has neither segments nor messages.
  for (const auto& r : a.timelines.ranks)
    if (r.segments.empty() && r.compact.size() > 0)
      throw std::invalid_argument(
          "AnalyzeOpal needs the segments and messages: analyse with keep_details");
  OpalBreakdown o;
  const RankTimeline* client = nullptr;
  std::vector<const RankTimeline*> servers;
  for (const auto& r : a.timelines.ranks) {
    if (r.rank == 0)
      client = &r;
    else
      servers.push_back(&r);
  }
  if (!client) throw std::runtime_error("opal responses: the trace has no rank 0 (the client)");
  if (servers.empty()) throw std::runtime_error("opal responses: the trace has no server ranks");
  o.p = int(servers.size());

  // The rule below assumes Opal's structure; on another application it would add up
  // overlapping windows into components longer than the run. Refuse what does not fit.
  uint64_t between_servers = 0;
  int32_t bs_src = -1, bs_dst = -1;
  for (const auto& m : a.p2p)
    if (m.src != 0 && m.dst != 0 && m.src != m.dst) {
      if (between_servers++ == 0) bs_src = m.src, bs_dst = m.dst;
    }
  if (between_servers)
    throw std::runtime_error(
        "opal responses: not Opal's client/server structure: servers exchange messages only "
        "with rank 0 (the client), but " +
        std::to_string(between_servers) + " point-to-point message" +
        (between_servers == 1 ? "" : "s") + " went between servers (the first from rank " +
        std::to_string(bs_src) + " to rank " + std::to_string(bs_dst) + ")");

  struct Round {
    double comp = 0;
    bool data = false;
    double request_send = 0, reply_recv = 0;
  };
  std::vector<std::vector<Round>> rounds(servers.size());
  size_t nrounds = SIZE_MAX;
  for (size_t si = 0; si < servers.size(); ++si) {
    const int32_t s = servers[si]->rank;
    std::vector<const MessageSummary*> req, rep;
    for (const auto& m : a.p2p) {
      if (m.src == 0 && m.dst == s) req.push_back(&m);
      if (m.src == s && m.dst == 0) rep.push_back(&m);
    }
    auto by_send = [](const MessageSummary* x, const MessageSummary* y) {
      return x->send_time < y->send_time;
    };
    std::sort(req.begin(), req.end(), by_send);
    std::sort(rep.begin(), rep.end(), by_send);
    size_t j = 0;
    double prev_reply = -1e300;
    for (const MessageSummary* q : req) {
      // A reply sent before its request arrived answers nothing; a request arriving before
      // the previous reply left means the server works on several requests at once. Either
      // way rounds would overlap and their computation be counted more than once.
      if (j < rep.size() && rep[j]->send_time < q->recv_time && !rounds[si].empty())
        throw std::runtime_error("opal responses: not a request/reply pattern: rank " +
                                 std::to_string(s) +
                                 " sent a message to rank 0 that answers no request (at " +
                                 std::to_string(rep[j]->send_time) + " s, between request " +
                                 std::to_string(rounds[si].size()) + " and request " +
                                 std::to_string(rounds[si].size() + 1) + ")");
      while (j < rep.size() && rep[j]->send_time < q->recv_time) ++j;
      if (j == rep.size()) break;
      if (q->recv_time < prev_reply)
        throw std::runtime_error("opal responses: not a request/reply pattern: request " +
                                 std::to_string(rounds[si].size() + 1) + " from rank 0 to rank " +
                                 std::to_string(s) +
                                 " arrived before the reply to the previous one was sent");
      prev_reply = rep[j]->send_time;
      Round r;
      r.comp = ComputationIn(*servers[si], q->recv_time, rep[j]->send_time);
      r.data = rep[j]->bytes > 0;
      r.request_send = q->send_time;
      r.reply_recv = rep[j]->recv_time;
      rounds[si].push_back(r);
      ++j;
    }
    nrounds = std::min(nrounds, rounds[si].size());
  }
  if (nrounds == 0 || nrounds == SIZE_MAX)
    throw std::runtime_error(
        "opal responses: no request-reply rounds between rank 0 (client) and the servers");
  for (size_t si = 0; si < servers.size(); ++si)
    if (rounds[si].size() != nrounds)
      o.notes.push_back("server " + std::to_string(servers[si]->rank) + " answered " +
                        std::to_string(rounds[si].size()) + " requests, others " +
                        std::to_string(nrounds) + ": extra rounds ignored");
  o.rounds = int(nrounds);

  // Steps: a round with data (the energy call) closes a step.
  bool any_data = false, all_data = true;
  std::vector<bool> data(nrounds, false);
  for (size_t k = 0; k < nrounds; ++k) {
    for (const auto& rs : rounds) data[k] = data[k] || rs[k].data;
    any_data = any_data || data[k];
    all_data = all_data && data[k];
  }
  const bool each_round_a_step = !any_data || all_data;
  double par = 0;
  std::vector<double> step_comp(servers.size(), 0.0);
  for (size_t k = 0; k < nrounds; ++k) {
    for (size_t si = 0; si < servers.size(); ++si) step_comp[si] += rounds[si][k].comp;
    if (each_round_a_step || data[k] || k + 1 == nrounds) {
      par += *std::max_element(step_comp.begin(), step_comp.end());
      std::fill(step_comp.begin(), step_comp.end(), 0.0);
      ++o.steps;
    }
  }

  // The client's step window.
  double first = rounds[0][0].request_send, last = rounds[0][nrounds - 1].reply_recv;
  for (const auto& rs : rounds) {
    first = std::min(first, rs[0].request_send);
    last = std::max(last, rs[nrounds - 1].reply_recv);
  }
  const auto& segs = client->segments;
  auto it = std::lower_bound(segs.begin(), segs.end(), first,
                             [](const Segment& s, double v) { return s.end <= v; });
  double ws = first;
  for (auto b = it; b != segs.begin();) {
    --b;
    // The client's own bookkeeping between the opening barrier and its first request (reading
    // a clock, setting up the call) is a sliver of computation, not a step's work.
    if (b->cat == kComputation && b->end - b->start < kBookkeepingS) continue;
    if (b->cat != kSyncWait && b->cat != kSyncOp) break;
    ws = b->start;
  }
  auto e = std::lower_bound(segs.begin(), segs.end(), last,
                            [](const Segment& s, double v) { return s.end <= v; });
  double we = last;
  for (; e != segs.end(); ++e) {
    if (e->end <= last) continue;
    if (e->cat == kTransfer || e->cat == kIdle || e->cat == kIo) break;
    we = e->end;
  }
  we = std::max(we, last);
  o.window_start = ws;
  o.window_end = we;

  // Rule 5a: the client's requests still travelling (in flight) or waiting for a late
  // receiver's post after the send call returned, as unions of disjoint sorted intervals.
  using Intervals = std::vector<std::pair<double, double>>;
  Intervals flight, late;
  for (const auto& m : a.p2p) {
    if (m.src != 0 || m.dst == 0 || !(m.recv_time > m.send_time)) continue;
    const double from = std::max(m.send_time, m.recv_post_time);
    if (m.recv_time > from) flight.push_back({from, m.recv_time});
    if (m.recv_post_time > m.send_time) late.push_back({m.send_time, m.recv_post_time});
  }
  const Intervals in_flight = Union(std::move(flight));
  const Intervals waiting_post = Subtract(Union(std::move(late)), in_flight);

  Times t{};
  double after_return = 0, raw_wait = 0;
  for (auto s = std::lower_bound(segs.begin(), segs.end(), ws,
                                 [](const Segment&x, double v) { return x.end <= v; });
       s != segs.end() && s->start < we; ++s) {
    const double a0 = std::max(ws, s->start), a1 = std::min(we, s->end);
    const double d = a1 - a0;
    if (d <= 0) continue;
    if (s->cat != kSyncWait && s->cat != kIdle) {
      t[s->cat] += d;
      continue;
    }
    const double moved = Overlap(in_flight, a0, a1);
    const double to_idle = s->cat == kSyncWait ? Overlap(waiting_post, a0, a1) : 0.0;
    after_return += moved;
    t[kTransfer] += moved;
    t[kIdle] += to_idle;
    t[s->cat] += std::max(0.0, d - moved - to_idle);
    raw_wait += d;
  }
  const double wall = we - ws;
  // Rounds that pass the checks above tile the window; anything else is an inconsistency
  // that must not reach a fit as a plausible number.
  if (par > wall * 1.01 + 1e-3)
    throw std::runtime_error("opal responses: the servers' computation on the critical path (" +
                             std::to_string(par) + " s) exceeds the client's window (" +
                             std::to_string(wall) +
                             " s): the run does not have Opal's request/reply structure");
  // Barrier time the servers' computation does not explain is synchronization, as Opal (and
  // opal-mini's timers) count it: a server late at a barrier, or stalled after its computation.
  // With barriers the client waits for the computation in the closing barrier, so that wait
  // is explained first; without them the waiting is in receives and stays idle.
  const double sync = t[kSyncOp] + t[kSyncWait] - std::min(t[kSyncWait], par);
  o.responses["t_wall"] = wall;
  o.responses["t_par_comp"] = par;
  o.responses["t_seq_comp"] = t[kComputation];
  o.responses["t_comm"] = t[kTransfer];
  o.responses["t_sync"] = sync;
  o.responses["t_idle"] = std::max(0.0, wall - par - t[kComputation] - t[kTransfer] - sync);
  o.t_wait = raw_wait;
  o.t_comm_after_return = after_return;
  o.t_unallocated = t[kUnallocated] + t[kIo] + t[kMemoryIo] + t[kPaused];
  return o;
}

std::map<std::string, double> OpalResponses(const Analysis& a) {
  return AnalyzeOpal(a).responses;
}

nlohmann::json ToJson(const OpalBreakdown& o) {
  nlohmann::json j = o.responses;
  j["p"] = o.p;
  j["rounds"] = o.rounds;
  j["steps"] = o.steps;
  j["window_start_s"] = o.window_start;
  j["window_end_s"] = o.window_end;
  j["t_wait"] = o.t_wait;
  j["t_comm_after_return"] = o.t_comm_after_return;
  j["t_unallocated"] = o.t_unallocated;
  j["notes"] = o.notes;
  return j;
}

}  // namespace invmw::analysis
