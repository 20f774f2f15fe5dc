// Message matching over a stream of events (StreamTrace), for `invmw trace check` and `invmw
// trace export` on traces larger than memory.
//
// Why: ReadTrace matches by sorting every send and receive of the trace, which holds one record
// per message; a stream can pair a channel's k-th send with its k-th receive as soon as neither
// can be preceded by one still to come, and forget both.
//
// Contract: the same pairs, unmatched sends and receives, and uncompleted receives as ReadTrace
// (per (communicator, source, destination, tag): sends in start order, receives in posting
// order, never-completed receives posted with invmw's attributes in their place), given events
// in StreamTrace's order. Equal keys are ordered by location and event index, as ReadTrace
// does. A send is final once the stream has passed its time; a receive once no receive of its
// channel can still come with an earlier post: the stream has passed its post, and so has every
// region still open on the receiving rank's locations (a blocking receive is posted at its
// region's Enter) and every nonblocking receive posted on that rank and not completed that could
// complete on the channel. Memory: the channels, the open requests, and the sends and receives
// not yet paired (messages in flight, those waiting behind an open receive of their rank, and
// the unmatched ones), never one record per event (empty channels are dropped). Timestamps that
// decrease on a location (which trace check reports) can make the pairing differ from ReadTrace's
// around them.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "otf2_reader/trace_reader.h"

namespace invmw::otf2 {

// One event, as much as the reports and the export say about it.
struct EventRef {
  size_t loc = 0;
  uint64_t index = 0;
  TraceEvent::Type type = TraceEvent::kOther;
  double time = 0;
  double enclosing = 0;  // Enter time of the innermost region open at it, else its own time
};

struct StreamMessage {
  int32_t src = -1, dst = -1;
  uint32_t comm = 0, tag = 0;
  uint64_t bytes = 0, recv_bytes = 0;
  EventRef send, recv;
  double send_time = 0, recv_post_time = 0, recv_time = 0;
};

class StreamMatcher {
 public:
  // `defs`: ReadTraceDefinitions() (locations and ranks); on_message gets each pair once final.
  StreamMatcher(const Trace& defs, std::function<void(const StreamMessage&)> on_message);
  void Event(size_t loc, uint64_t index, const TraceEvent& e, const UncompletedRecv* posted);
  // Pairs what is left; then the lists below are ReadTrace's.
  void Finish();

  std::vector<EventRef> unmatched_sends, unmatched_recvs;
  std::vector<UncompletedRecv> uncompleted_recvs;  // in post order
  std::vector<EventRef> uncompleted_send;  // per uncompleted receive: the send matched to it
  uint64_t messages = 0;
  size_t peak_pending = 0;  // most sends and receives held at once (for the benchmark)

 private:
  using Key = std::tuple<uint32_t, int32_t, int32_t, uint32_t>;  // comm, src, dst, tag
  struct Send {
    EventRef ref;
    uint64_t bytes;
  };
  struct Recv {
    EventRef ref;
    double post;
    uint64_t bytes;
    int64_t uncompleted = -1;  // index into uncompleted_recvs
  };
  struct Channel {
    std::deque<Send> sends;
    std::deque<Recv> recvs;
    bool had_send = false;
    bool listed = false;  // in active_
  };
  struct Post {
    double time;
    size_t loc;
    bool attributed = false;  // carries invmw's posted attributes (below)
    UncompletedRecv u;
  };

  double Watermark(const Key& k) const;
  void Drain(bool finishing);
  void Activate(const Key& k, Channel& c);

  const Trace& t_;
  std::function<void(const StreamMessage&)> on_message_;
  std::map<Key, Channel> channels_;
  std::vector<Key> active_;  // the channels in channels_ (each holds sends or receives)
  std::vector<std::vector<double>> open_;  // per location: Enter times of its open regions
  // Nonblocking receives posted and not completed nor cancelled: by (rank, request) (the latest
  // start of a request on its rank) and by (location, request).
  std::map<std::pair<int32_t, uint64_t>, Post> rank_post_;
  std::map<std::pair<size_t, uint64_t>, double> loc_post_;
  double now_ = -1e300;
  size_t pending_ = 0;
  uint64_t since_drain_ = 0;
};

}  // namespace invmw::otf2
