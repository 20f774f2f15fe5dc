// An OTF2 archive loaded into memory for analysis: per-rank event sequences on one global time
// axis, and point-to-point messages matched send to receive.
//
// Why: the analysis code (inverse mapping: computation, transfer, synchronisation, idle time per
// rank) and `invmw trace check/export` all need the same two things, events in time order per
// location and who sent what to whom; reading OTF2 callbacks in each of them would repeat the
// subtle parts (clock offsets, communicator-rank to world-rank mapping, request tracking).
//
// Contract: ReadTrace reads any OTF2 archive whose MPI records follow the usual conventions
// (not only invmw's). Timestamps are corrected by the OTF2 reader library with the archive's
// ClockOffset definitions and given in seconds from the clock properties' global offset.
// Peers are world ranks (via COMM_GROUP -> COMM_LOCATIONS). Messages are matched per
// (communicator, source, destination, tag) in MPI's non-overtaking order: sends in the order
// they were started, receives in the order they were posted, including receives that were
// posted but never completed (Trace::uncompleted_recvs). Throws std::runtime_error with the
// archive path and the failing step when the archive cannot be read.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace invmw::otf2 {

struct TraceEvent {
  enum Type : uint8_t {
    kEnter,
    kLeave,
    kMpiSend,
    kMpiIsend,
    kMpiIsendComplete,
    kMpiIrecvRequest,
    kMpiRecv,
    kMpiIrecv,
    kMpiRequestTest,
    kMpiRequestCancelled,
    kMpiCollectiveBegin,
    kMpiCollectiveEnd,
    kNonBlockingCollectiveRequest,
    kNonBlockingCollectiveComplete,
    kCommCreate,
    kCommDestroy,
    kOther,
    kNumTypes
  };
  uint64_t ticks = 0;       // global (corrected) timestamp in timer ticks
  double time = 0;          // seconds since the global offset
  uint64_t bytes = 0;       // p2p length; collectives: bytes sent
  uint64_t bytes_recv = 0;  // collectives
  uint64_t request = 0;
  uint32_t region = UINT32_MAX;  // Enter/Leave
  uint32_t comm = UINT32_MAX;
  int32_t peer = -1;  // p2p: world rank of the other side; collectives: root (world)
  uint32_t tag = 0;
  uint32_t coll_op = UINT32_MAX;
  uint32_t calls = 1;  // Enter: the calls one visit stands for (invmw:coalesced_calls)
  // Enter: the call's calling context (invmw:callsite), an index into Trace::callsites;
  // UINT32_MAX when the call carries none.
  uint32_t callsite = UINT32_MAX;
  Type type = kOther;
  bool cut_off = false;  // Leave: the run ended abnormally inside this call (invmw:cut_off)
};
const char* EventTypeName(TraceEvent::Type t);

struct TraceMetricSample {
  uint64_t ticks = 0;  // global (corrected) timestamp
  double time = 0;     // seconds since the global offset
  uint32_t metric_class = 0;
  std::vector<double> values;  // one per member of the class
};

struct TraceLocation {
  uint64_t id = 0;
  std::string name;
  int32_t rank = -1;             // world rank of its location group
  uint64_t declared_events = 0;  // from the definitions
  // Largest standard deviation of its clock offsets to rank 0 (local ClockOffset definitions),
  // in seconds: how far its timestamps may be off those of another rank's.
  double clock_uncertainty_s = 0;
  std::vector<TraceEvent> events;  // empty when read with ReadOptions::keep_events false
  // Read from the archive whether kept or not: the number of events, the first and last
  // timestamps (seconds), and the regions entered (sorted refs below the region count).
  uint64_t event_count = 0;
  double first_time = 0, last_time = 0;
  std::vector<uint32_t> regions_entered;
  // Synchronous metrics (per-call counters, INVMW_TRACE_COUNTERS) in time order.
  std::vector<TraceMetricSample> metrics;
};

// The sampler's metrics (asynchronous Metric records on locations of type METRIC), kept apart
// from the thread locations so analyses of MPI events never see them.
struct TraceMetricMember {
  std::string name, unit;
  bool accumulated = false;  // OTF2_METRIC_ACCUMULATED_* (else absolute)
};
struct TraceMetricLocation {
  uint64_t id = 0;
  std::string name;
  int32_t rank = -1;
  uint64_t declared_events = 0;
  std::vector<TraceMetricSample> samples;
};

struct TraceRegion {
  std::string name;
  int role = 0;  // OTF2_RegionRole
  int paradigm = 0;
};

struct TraceComm {
  std::string name;
  std::vector<int32_t> members;  // world ranks in communicator-rank order
};

// One message. Indices point into Trace::locations[...].events.
struct Message {
  int32_t src = -1, dst = -1;
  uint32_t comm = 0, tag = 0;
  uint64_t bytes = 0;                   // as sent
  uint64_t recv_bytes = 0;              // as received
  size_t send_loc = 0, send_event = 0;  // the MpiSend / MpiIsend event
  size_t recv_loc = 0, recv_event = 0;  // the MpiRecv / MpiIrecv event (receive complete)
  double send_time = 0;                 // start of the send
  double recv_post_time = 0;  // when the receive was posted (Enter of MPI_Recv, or MpiIrecvRequest)
  double recv_time = 0;       // when the receive completed
};

// A send or receive without partner.
struct Unmatched {
  size_t loc = 0, event = 0;
};

// A nonblocking receive that was posted (MpiIrecvRequest carrying invmw's posted_source,
// posted_tag and posted_comm attributes) but never completed nor cancelled: its request was
// leaked, freed, or still open at the end. MPI matches messages to receives in the order the
// receives were posted, completed or not, so such a receive takes its place in the matching
// order; when a message matched it, the message is here and not in Trace::messages.
struct UncompletedRecv {
  size_t loc = 0, event = 0;  // the MpiIrecvRequest event
  int32_t rank = -1;
  int32_t peer = -1;  // world rank posted for; -1 any source
  int32_t tag = -1;   // -1 any tag
  uint32_t comm = 0;
  double post_time = 0;
  bool matched = false;  // a message was matched to it (below)
  uint64_t bytes = 0;    // the matched send's length
  size_t send_loc = 0, send_event = 0;
  // Posted with MPI_ANY_SOURCE or MPI_ANY_TAG: which message it took cannot be told from the
  // trace, so it is left out of matching (matching after it on its channels may be off).
  bool wildcard = false;
};

struct Trace {
  std::string path;
  uint64_t timer_resolution = 0;
  uint64_t global_offset = 0, trace_length = 0;
  uint64_t realtime_ns = 0;  // UINT64_MAX when unknown
  std::map<std::string, std::string> properties;
  std::vector<TraceRegion> regions;  // by region ref
  // Calling contexts by reference: where in the application a call was made (the Enter's
  // invmw:callsite attribute). function: the context's region; file and line from its
  // SourceCodeLocation ("" and 0 without one).
  struct CallSite {
    std::string function, file;
    uint32_t line = 0;
  };
  std::vector<CallSite> callsites;
  std::map<uint32_t, TraceComm> comms;
  std::vector<TraceLocation> locations;  // by location id order (metric locations excluded)
  std::vector<TraceMetricMember> metric_members;             // by member ref
  std::map<uint32_t, std::vector<uint32_t>> metric_classes;  // class ref -> member refs
  std::vector<TraceMetricLocation> metric_locations;         // by location id order
  std::map<int32_t, std::vector<size_t>> locations_of_rank;
  std::vector<Message> messages;
  std::vector<Unmatched> unmatched_sends, unmatched_recvs;
  std::vector<UncompletedRecv> uncompleted_recvs;  // in post order per rank
  // Read with ReadOptions::keep_events false: the locations' events are not in memory;
  // StreamRankEvents() reads them again (message and event indices are the same).
  bool events_streamed = false;
};

// threads: reader threads, each with its own OTF2 reader over a share of the ranks (all the
// locations of a rank in one share, shares of about equal declared events); the result is
// the same for any number (ties in matching are broken by location and event index, not by
// reading order). The OTF2 library decodes one location's events at a time, so a second
// thread nearly halves the reading time on a trace of several ranks.
struct ReadOptions {
  int threads = 1;
  // When set: the CPU time of each reader thread (seconds), for benchmarks.
  std::vector<double>* thread_cpu_s = nullptr;
  // false: the events are read for matching and counting but not kept (the first pass of a
  // streaming analysis: memory grows with the messages, not with the events).
  bool keep_events = true;
  // false: Trace::messages are left in matching order (by communicator, source, destination,
  // tag, then send) instead of sorted by send time, for a reader that does not need the order
  // (`invmw analyze` without --opal: BuildTimelines takes each location's by event index). The
  // serial sort of 10^7 messages took 1.3 s of CPU.
  bool sort_messages = true;
};
Trace ReadTrace(const std::string& anchor_path, const ReadOptions& options = {});

// The events of the thread locations of world rank `rank` of a trace ReadTrace() returned
// (definitions only are used), read again from t.path and given to fn(location index, event)
// one at a time, each location's in order (a rank's locations merged in time order); nothing is
// kept. Safe to call from several threads at once (each opens its own OTF2 reader).
void StreamRankEvents(const Trace& t, int32_t rank,
                      const std::function<void(size_t, const TraceEvent&)>& fn);
// Streaming reading, for `invmw trace check` and `invmw trace export` on traces larger than
// memory: ReadTraceDefinitions() reads the definitions only (locations, communicators, regions,
// metrics, properties; no events, no messages), StreamTrace() then gives the events of the
// selected locations to `event` one at a time and keeps none of them. The events come in the
// order the OTF2 reader merges the locations (timestamp order across them; each location's
// in its own order); `index` is the event's position in its location. `posted` is set for an
// MpiIrecvRequest carrying invmw's posted_source/tag/comm attributes (loc, event, rank, peer,
// tag, comm, post_time, wildcard filled in). Metric samples go to `metric` (on a metric
// location: index into Trace::metric_locations, else into Trace::locations), in the same
// order. StreamTrace sets the selected locations' event_count, first/last_time and
// clock_uncertainty_s. Memory: the definitions and, per selected location, its open regions.
struct StreamOptions {
  std::vector<char> locations, metric_locations;  // 1: read; empty: all of them
  std::function<void(size_t loc, uint64_t index, const TraceEvent& e,
                     const UncompletedRecv* posted)>
      event;
  std::function<void(bool on_metric_location, size_t loc, const TraceMetricSample& s)> metric;
};
Trace ReadTraceDefinitions(const std::string& anchor_path);
void StreamTrace(Trace* t, const StreamOptions& options);

// The machine's cores (std::thread::hardware_concurrency), at least 1.
int DefaultReadThreads();

}  // namespace invmw::otf2
