#include "analysis/tests/trace_builder.h"

#include <algorithm>

namespace invmw::analysis::testing {

using invmw::otf2::Message;
using invmw::otf2::Trace;
using invmw::otf2::TraceEvent;

TraceBuilder::TraceBuilder(int ranks) {
  t_.path = "(built by hand)";
  t_.timer_resolution = 1000000000;
  for (int r = 0; r < ranks; ++r) {
    invmw::otf2::TraceLocation l;
    l.id = uint64_t(r);
    l.name = "rank " + std::to_string(r) + " main";
    l.rank = r;
    t_.locations.push_back(l);
    t_.locations_of_rank[r].push_back(size_t(r));
    t_.comms[0].members.push_back(r);
  }
  t_.comms[0].name = "MPI_COMM_WORLD";
}

uint32_t TraceBuilder::Region(const std::string& name, OTF2_RegionRole role,
                              OTF2_Paradigm paradigm) {
  auto it = regions_.find(name);
  if (it != regions_.end()) return it->second;
  const uint32_t id = uint32_t(t_.regions.size());
  t_.regions.push_back({name, int(role), int(paradigm)});
  regions_[name] = id;
  return id;
}

TraceEvent& TraceBuilder::Add(int r, TraceEvent::Type type, double t) {
  TraceEvent e;
  e.type = type;
  e.time = t;
  e.ticks = uint64_t(t * 1e9);
  t_.locations[r].events.push_back(e);
  return t_.locations[r].events.back();
}

void TraceBuilder::Enter(int r, const std::string& name, OTF2_RegionRole role, double t) {
  Add(r, TraceEvent::kEnter, t).region = Region(name, role, OTF2_PARADIGM_MPI);
}
void TraceBuilder::Leave(int r, const std::string& name, OTF2_RegionRole role, double t) {
  Add(r, TraceEvent::kLeave, t).region = Region(name, role, OTF2_PARADIGM_MPI);
}

TraceBuilder& TraceBuilder::Init(int r, double t) {
  Enter(r, "MPI_Init", OTF2_REGION_ROLE_FUNCTION, 0);
  Leave(r, "MPI_Init", OTF2_REGION_ROLE_FUNCTION, t);
  return *this;
}
TraceBuilder& TraceBuilder::Finalize(int r, double t) {
  Enter(r, "MPI_Finalize", OTF2_REGION_ROLE_FUNCTION, t);
  Leave(r, "MPI_Finalize", OTF2_REGION_ROLE_FUNCTION, t + 0.001);
  return *this;
}

TraceBuilder& TraceBuilder::Send(int r, int dst, double enter, double leave, uint64_t bytes,
                                 int tag) {
  Enter(r, "MPI_Send", OTF2_REGION_ROLE_POINT2POINT, enter);
  TraceEvent& e = Add(r, TraceEvent::kMpiSend, enter);
  e.peer = dst, e.tag = uint32_t(tag), e.bytes = bytes, e.comm = 0;
  sends_.push_back({r, dst, tag, enter, t_.locations[r].events.size() - 1});
  Leave(r, "MPI_Send", OTF2_REGION_ROLE_POINT2POINT, leave);
  return *this;
}

TraceBuilder& TraceBuilder::Recv(int r, int src, double enter, double leave, uint64_t bytes,
                                 int tag) {
  Enter(r, "MPI_Recv", OTF2_REGION_ROLE_POINT2POINT, enter);
  TraceEvent& e = Add(r, TraceEvent::kMpiRecv, leave);
  e.peer = src, e.tag = uint32_t(tag), e.bytes = bytes, e.comm = 0;
  recvs_.push_back({src, r, tag, enter, leave, t_.locations[r].events.size() - 1});
  Leave(r, "MPI_Recv", OTF2_REGION_ROLE_POINT2POINT, leave);
  return *this;
}

TraceBuilder& TraceBuilder::IsendWait(int r, int dst, double at, double wait_enter,
                                      double wait_leave, uint64_t bytes, int tag) {
  const uint64_t req = next_request_++;
  Enter(r, "MPI_Isend", OTF2_REGION_ROLE_POINT2POINT, at);
  TraceEvent& e = Add(r, TraceEvent::kMpiIsend, at);
  e.peer = dst, e.tag = uint32_t(tag), e.bytes = bytes, e.comm = 0, e.request = req;
  sends_.push_back({r, dst, tag, at, t_.locations[r].events.size() - 1});
  Leave(r, "MPI_Isend", OTF2_REGION_ROLE_POINT2POINT, at + 1e-6);
  Enter(r, "MPI_Wait", OTF2_REGION_ROLE_POINT2POINT, wait_enter);
  Add(r, TraceEvent::kMpiIsendComplete, wait_leave).request = req;
  Leave(r, "MPI_Wait", OTF2_REGION_ROLE_POINT2POINT, wait_leave);
  return *this;
}

TraceBuilder& TraceBuilder::IrecvWait(int r, int src, double at, double wait_enter,
                                      double wait_leave, uint64_t bytes, int tag) {
  const uint64_t req = next_request_++;
  Enter(r, "MPI_Irecv", OTF2_REGION_ROLE_POINT2POINT, at);
  Add(r, TraceEvent::kMpiIrecvRequest, at).request = req;
  Leave(r, "MPI_Irecv", OTF2_REGION_ROLE_POINT2POINT, at + 1e-6);
  Enter(r, "MPI_Wait", OTF2_REGION_ROLE_POINT2POINT, wait_enter);
  TraceEvent& e = Add(r, TraceEvent::kMpiIrecv, wait_leave);
  e.peer = src, e.tag = uint32_t(tag), e.bytes = bytes, e.comm = 0, e.request = req;
  recvs_.push_back({src, r, tag, at, wait_leave, t_.locations[r].events.size() - 1});
  Leave(r, "MPI_Wait", OTF2_REGION_ROLE_POINT2POINT, wait_leave);
  return *this;
}

void TraceBuilder::Collective(int r, const char* name, OTF2_RegionRole role, uint32_t op, int root,
                              double enter, double leave, uint64_t bytes) {
  Enter(r, name, role, enter);
  Add(r, TraceEvent::kMpiCollectiveBegin, enter);
  TraceEvent& e = Add(r, TraceEvent::kMpiCollectiveEnd, leave);
  e.coll_op = op, e.comm = 0, e.peer = root, e.bytes = bytes;
  Leave(r, name, role, leave);
}

TraceBuilder& TraceBuilder::Barrier(int r, double enter, double leave) {
  Collective(r, "MPI_Barrier", OTF2_REGION_ROLE_BARRIER, OTF2_COLLECTIVE_OP_BARRIER, -1, enter,
             leave, 0);
  return *this;
}
TraceBuilder& TraceBuilder::Bcast(int r, int root, double enter, double leave, uint64_t bytes) {
  Collective(r, "MPI_Bcast", OTF2_REGION_ROLE_COLL_ONE2ALL, OTF2_COLLECTIVE_OP_BCAST, root, enter,
             leave, bytes);
  return *this;
}
TraceBuilder& TraceBuilder::Reduce(int r, int root, double enter, double leave, uint64_t bytes) {
  Collective(r, "MPI_Reduce", OTF2_REGION_ROLE_COLL_ALL2ONE, OTF2_COLLECTIVE_OP_REDUCE, root, enter,
             leave, bytes);
  return *this;
}

TraceBuilder& TraceBuilder::Pcontrol(int r, double enter, double leave) {
  Enter(r, "MPI_Pcontrol", OTF2_REGION_ROLE_FUNCTION, enter);
  Leave(r, "MPI_Pcontrol", OTF2_REGION_ROLE_FUNCTION, leave);
  return *this;
}
TraceBuilder& TraceBuilder::Pause(int r, double enter, double leave) {
  Pcontrol(r, enter - 1e-6, enter);
  Enter(r, "invmw:paused", OTF2_REGION_ROLE_ARTIFICIAL, enter);
  Leave(r, "invmw:paused", OTF2_REGION_ROLE_ARTIFICIAL, leave);
  Pcontrol(r, leave, leave + 1e-6);
  return *this;
}
TraceBuilder& TraceBuilder::OtherMpi(int r, double enter, double leave) {
  Enter(r, "MPI_Comm_dup", OTF2_REGION_ROLE_FUNCTION, enter);
  Leave(r, "MPI_Comm_dup", OTF2_REGION_ROLE_FUNCTION, leave);
  return *this;
}
TraceBuilder& TraceBuilder::FileWrite(int r, double enter, double leave) {
  Enter(r, "MPI_File_write", OTF2_REGION_ROLE_FILE_IO, enter);
  Leave(r, "MPI_File_write", OTF2_REGION_ROLE_FILE_IO, leave);
  return *this;
}
TraceBuilder& TraceBuilder::UserEnter(int r, const std::string& name, double t) {
  Add(r, TraceEvent::kEnter, t).region =
      Region(name, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER);
  return *this;
}
TraceBuilder& TraceBuilder::UserLeave(int r, const std::string& name, double t) {
  Add(r, TraceEvent::kLeave, t).region =
      Region(name, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER);
  return *this;
}

TraceBuilder& TraceBuilder::Metric(int r, const std::string& name,
                                   const std::vector<std::pair<double, double>>& series) {
  metrics_[r][name] = series;
  return *this;
}

Trace TraceBuilder::Build() {
  Trace t = t_;
  // Match like ReadTrace: per (src, dst, tag), sends by start, receives by posting.
  using Key = std::tuple<int, int, int>;
  std::map<Key, std::vector<PendingSend>> s;
  std::map<Key, std::vector<PendingRecv>> rv;
  for (const auto& x : sends_) s[{x.src, x.dst, x.tag}].push_back(x);
  for (const auto& x : recvs_) rv[{x.src, x.dst, x.tag}].push_back(x);
  for (auto& [key, list] : s) {
    auto& rl = rv[key];
    std::stable_sort(list.begin(), list.end(), [](auto& a, auto& b) { return a.time < b.time; });
    std::stable_sort(rl.begin(), rl.end(), [](auto& a, auto& b) { return a.post < b.post; });
    for (size_t i = 0; i < std::min(list.size(), rl.size()); ++i) {
      Message m;
      m.src = list[i].src, m.dst = list[i].dst, m.tag = uint32_t(list[i].tag), m.comm = 0;
      m.send_loc = size_t(m.src), m.send_event = list[i].event;
      m.recv_loc = size_t(m.dst), m.recv_event = rl[i].event;
      m.bytes = t.locations[m.src].events[list[i].event].bytes;
      m.recv_bytes = t.locations[m.dst].events[rl[i].event].bytes;
      m.send_time = list[i].time, m.recv_post_time = rl[i].post, m.recv_time = rl[i].time;
      t.messages.push_back(m);
    }
  }
  std::sort(t.messages.begin(), t.messages.end(),
            [](const Message& a, const Message& b) { return a.send_time < b.send_time; });
  // Metrics: one class per rank holding all its metrics, samples at the union of the times.
  for (const auto& [rank, series] : metrics_) {
    std::vector<uint32_t> members;
    for (const auto& [name, values] : series) {
      members.push_back(uint32_t(t.metric_members.size()));
      t.metric_members.push_back({name, "", true});
    }
    const uint32_t cls = uint32_t(t.metric_classes.size());
    t.metric_classes[cls] = members;
    invmw::otf2::TraceMetricLocation loc;
    loc.id = 1000 + uint64_t(rank);
    loc.rank = rank;
    const size_t n = series.begin()->second.size();
    for (size_t i = 0; i < n; ++i) {
      invmw::otf2::TraceMetricSample smp;
      smp.time = series.begin()->second[i].first;
      smp.metric_class = cls;
      for (const auto& [name, values] : series) smp.values.push_back(values[i].second);
      loc.samples.push_back(smp);
    }
    t.metric_locations.push_back(loc);
  }
  return t;
}

}  // namespace invmw::analysis::testing
