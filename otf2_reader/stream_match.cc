#include "otf2_reader/stream_match.h"

#include <algorithm>
#include <utility>

namespace invmw::otf2 {
namespace {

// Often enough that few records wait for a drain, rarely enough that walking the channels
// with something pending costs little per event.
constexpr uint64_t kDrainEvery = 1024;

}  // namespace

StreamMatcher::StreamMatcher(const Trace& defs,
                             std::function<void(const StreamMessage&)> on_message)
    : t_(defs), on_message_(std::move(on_message)), open_(defs.locations.size()) {}

void StreamMatcher::Activate(const Key& k, Channel& c) {
  if (c.listed) return;
  c.listed = true;
  active_.push_back(k);
}

void StreamMatcher::Event(size_t li, uint64_t index, const TraceEvent& e,
                          const UncompletedRecv* posted) {
  now_ = std::max(now_, e.time);
  auto& open = open_[li];
  const int32_t rank = t_.locations[li].rank;
  EventRef ref{li, index, e.type, e.time, open.empty() ? e.time : open.back()};
  switch (e.type) {
    case TraceEvent::kEnter:
      open.push_back(e.time);
      break;
    case TraceEvent::kLeave:
      if (!open.empty()) open.pop_back();
      break;
    case TraceEvent::kMpiSend:
    case TraceEvent::kMpiIsend: {
      const Key k{e.comm, rank, e.peer, e.tag};
      Channel& c = channels_[k];
      c.had_send = true;
      auto pos = c.sends.end();  // in (time, location, event) order; nearly always the end
      while (pos != c.sends.begin()) {
        const auto& p = *std::prev(pos);
        if (std::tie(p.ref.time, p.ref.loc, p.ref.index) <= std::tie(e.time, li, index)) break;
        --pos;
      }
      c.sends.insert(pos, Send{ref, e.bytes});
      ++pending_;
      Activate(k, c);
      break;
    }
    case TraceEvent::kMpiIrecvRequest: {
      loc_post_[{li, e.request}] = e.time;
      Post p{e.time, li, posted != nullptr, {}};
      if (posted) p.u = *posted;
      rank_post_[{rank, e.request}] = p;  // a persistent request's new start replaces the last
      break;
    }
    case TraceEvent::kMpiRequestCancelled: {
      // A cancelled receive matched nothing (its completion, if any, is silent).
      if (auto it = rank_post_.find({rank, e.request}); it != rank_post_.end()) {
        loc_post_.erase({it->second.loc, e.request});
        rank_post_.erase(it);
      }
      loc_post_.erase({li, e.request});
      break;
    }
    case TraceEvent::kMpiRecv:
    case TraceEvent::kMpiIrecv: {
      double post = e.time;
      if (e.type == TraceEvent::kMpiRecv) {
        post = ref.enclosing;  // posted at the Enter of the call it completes in
      } else {
        auto rp = rank_post_.find({rank, e.request});
        if (auto it = loc_post_.find({li, e.request}); it != loc_post_.end()) {
          post = it->second;
          loc_post_.erase(it);
          if (rp != rank_post_.end()) {
            if (rp->second.loc == li)
              rank_post_.erase(rp);
            else
              rp->second.attributed = false;  // completed: no longer a receive left open
          }
        } else if (rp != rank_post_.end()) {
          post = rp->second.time;  // posted by another thread of the same process
          loc_post_.erase({rp->second.loc, e.request});
          rank_post_.erase(rp);
        }
      }
      const Key k{e.comm, e.peer, rank, e.tag};
      Channel& c = channels_[k];
      auto pos = c.recvs.end();  // in (post, location, event) order
      while (pos != c.recvs.begin()) {
        const auto& p = *std::prev(pos);
        if (std::tie(p.post, p.ref.loc, p.ref.index) <= std::tie(post, li, index)) break;
        --pos;
      }
      c.recvs.insert(pos, Recv{ref, post, e.bytes});
      ++pending_;
      Activate(k, c);
      break;
    }
    default:
      break;
  }
  peak_pending = std::max(peak_pending, pending_);
  if (++since_drain_ >= kDrainEvery) {
    since_drain_ = 0;
    Drain(false);
  }
}

// The earliest post a receive of channel k still to come can have.
double StreamMatcher::Watermark(const Key& k) const {
  const auto& [comm, src, dst, tag] = k;
  double w = now_;
  if (auto it = t_.locations_of_rank.find(dst); it != t_.locations_of_rank.end())
    for (size_t li : it->second) {
      if (!open_[li].empty()) w = std::min(w, open_[li].front());
      for (auto p = loc_post_.lower_bound({li, 0}); p != loc_post_.end() && p->first.first == li;
           ++p)
        w = std::min(w, p->second);
    }
  for (auto p = rank_post_.lower_bound({dst, 0}); p != rank_post_.end() && p->first.first == dst;
       ++p) {
    const Post& q = p->second;
    // A receive posted with its source, tag and communicator completes on that channel only.
    const bool could = !q.attributed || (q.u.comm == comm && (q.u.peer < 0 || q.u.peer == src) &&
                                         (q.u.tag < 0 || uint32_t(q.u.tag) == tag));
    if (could) w = std::min(w, q.time);
  }
  return w;
}

void StreamMatcher::Drain(bool finishing) {
  size_t kept = 0;
  for (size_t a = 0; a < active_.size(); ++a) {
    const Key k = active_[a];
    Channel& c = channels_[k];
    if (!c.sends.empty() && !c.recvs.empty()) {
      const double w = finishing ? 0 : Watermark(k);
      while (!c.sends.empty() && !c.recvs.empty() &&
             (finishing || (c.sends.front().ref.time < now_ && c.recvs.front().post < w))) {
        const Send s = c.sends.front();
        const Recv r = c.recvs.front();
        c.sends.pop_front();
        c.recvs.pop_front();
        pending_ -= 2;
        if (r.uncompleted >= 0) {
          UncompletedRecv& u = uncompleted_recvs[size_t(r.uncompleted)];
          u.matched = true;
          u.send_loc = s.ref.loc;
          u.send_event = size_t(s.ref.index);
          u.bytes = s.bytes;
          uncompleted_send[size_t(r.uncompleted)] = s.ref;
          continue;
        }
        ++messages;
        StreamMessage m;
        std::tie(m.comm, m.src, m.dst, m.tag) = k;
        m.bytes = s.bytes;
        m.recv_bytes = r.bytes;
        m.send = s.ref;
        m.recv = r.ref;
        m.send_time = s.ref.time;
        m.recv_post_time = r.post;
        m.recv_time = r.ref.time;
        on_message_(m);
      }
    }
    // An empty channel is dropped: an application that gives every message a tag of its own
    // would otherwise leave one per message. (What is lost: whether a dropped channel had sends,
    // which only orders the receives it may later get and that stay unmatched, see Finish.)
    if (c.sends.empty() && c.recvs.empty())
      channels_.erase(k);
    else
      active_[kept++] = k;
  }
  active_.resize(kept);
}

void StreamMatcher::Finish() {
  // Receives posted with invmw's attributes and never completed nor cancelled take their place
  // in the posting order (ReadTrace: Trace::uncompleted_recvs).
  std::vector<UncompletedRecv> open;
  for (const auto& [key, p] : rank_post_)
    if (p.attributed) open.push_back(p.u);
  std::sort(open.begin(), open.end(), [](const auto& a, const auto& b) {
    return std::tie(a.post_time, a.loc, a.event) < std::tie(b.post_time, b.loc, b.event);
  });
  for (const auto& u : open) {
    uncompleted_recvs.push_back(u);
    uncompleted_send.emplace_back();
    if (u.wildcard) continue;
    const Key k{u.comm, u.peer, u.rank, uint32_t(u.tag)};
    Channel& c = channels_[k];
    EventRef ref{u.loc, u.event, TraceEvent::kMpiIrecvRequest, u.post_time, u.post_time};
    auto pos = c.recvs.end();
    while (pos != c.recvs.begin()) {
      const auto& p = *std::prev(pos);
      if (std::tie(p.post, p.ref.loc, p.ref.index) <= std::tie(u.post_time, u.loc, ref.index))
        break;
      --pos;
    }
    c.recvs.insert(pos, Recv{ref, u.post_time, 0, int64_t(uncompleted_recvs.size() - 1)});
    ++pending_;
    Activate(k, c);
  }
  peak_pending = std::max(peak_pending, pending_);
  Drain(true);
  // What is left, in ReadTrace's order: by channel, then in MPI's order; the receives of
  // channels without any send last (a channel emptied and dropped on the way counts as one
  // without sends here). A receive still open that no message reached is no error.
  std::vector<EventRef> recv_only;
  for (auto& [k, c] : channels_) {
    for (const auto& s : c.sends) unmatched_sends.push_back(s.ref);
    for (const auto& r : c.recvs)
      if (r.uncompleted < 0) (c.had_send ? unmatched_recvs : recv_only).push_back(r.ref);
    c.sends.clear();
    c.recvs.clear();
  }
  unmatched_recvs.insert(unmatched_recvs.end(), recv_only.begin(), recv_only.end());
  active_.clear();
  pending_ = 0;
}

}  // namespace invmw::otf2
