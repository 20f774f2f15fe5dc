#include "otf2_writer/parallel_convert.h"

#include <otf2/otf2.h>
#include <time.h>

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "otf2_writer/conversion.h"
#include "otf2_writer/function_info.h"
#include "otf2_writer/otf2_open.h"
#include "otf2_writer/output_files.h"
#include "otf2_writer/trace_callsites.h"

namespace invmw::otf2 {
namespace {

using conv::Conversion;
using conv::LocationOut;
using nlohmann::json;

constexpr size_t kMaxPerClass = 255;  // as the serial converter splits the sampler's metrics

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Text of a message: invalid UTF-8 (a host name, a problem quoting a damaged file) is replaced,
// never a reason to throw in the middle of an exchange the other ranks wait for.
std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string MemberKey(const RawMetric& m) {
  return m.name + "\n" + m.unit + (m.accumulated ? "\na" : "\nb");
}

// The definitions whose references must agree across ranks, in the order in which the serial
// converter meets them (rank by rank: functions, per-call counters, sampler metrics, and
// communicators), each kept once. Merging the sets of consecutive rank ranges in rank order
// keeps that order, so the unified references are the serial converter's.
struct DefSet {
  struct Func {
    std::string name, kind, cls;
  };
  std::vector<Func> regions;
  std::set<std::string> region_names;
  std::vector<RawMetric> members;
  std::set<std::string> member_keys;
  std::vector<std::pair<std::vector<std::string>, bool>> classes;  // member keys, synchronous
  std::set<std::pair<std::vector<std::string>, bool>> class_keys;
  std::vector<CommIdentity> comms;
  std::set<std::tuple<bool, std::vector<int32_t>, std::vector<int32_t>, int>> comm_keys;
  std::vector<std::string> contexts;  // call-site labels (trace_callsites.h)
  std::set<std::string> context_keys;
  std::vector<std::string> errors;  // "rank R: ..." of ranks that cannot take part

  void AddRegion(const Func& f) {
    if (region_names.insert(f.name).second) regions.push_back(f);
  }
  void AddMember(const RawMetric& m) {
    if (member_keys.insert(MemberKey(m)).second) members.push_back(m);
  }
  void AddClass(const std::vector<std::string>& keys, bool sync) {
    if (class_keys.insert({keys, sync}).second) classes.emplace_back(keys, sync);
  }
  void AddComm(const CommIdentity& c) {
    if (comm_keys.insert(c.Key()).second) comms.push_back(c);
  }
  void AddContext(const std::string& label) {
    if (context_keys.insert(label).second) contexts.push_back(label);
  }

  json ToJson() const {
    json j = {{"regions", json::array()}, {"members", json::array()}, {"classes", json::array()},
              {"comms", json::array()},   {"contexts", contexts},     {"errors", errors}};
    for (const auto& f : regions) j["regions"].push_back({f.name, f.kind, f.cls});
    for (const auto& m : members)
      j["members"].push_back({m.name, m.unit, m.source, m.description, m.accumulated});
    for (const auto& [keys, sync] : classes) j["classes"].push_back({keys, sync});
    for (const auto& c : comms) j["comms"].push_back({c.inter, c.a, c.b, c.k});
    return j;
  }
  // Appends what `j` (a later rank range) has that this set has not.
  void Merge(const json& j) {
    for (const auto& f : j.at("regions"))
      AddRegion(
          {f.at(0).get<std::string>(), f.at(1).get<std::string>(), f.at(2).get<std::string>()});
    for (const auto& m : j.at("members"))
      AddMember({m.at(0).get<std::string>(), m.at(1).get<std::string>(), m.at(2).get<std::string>(),
                 m.at(3).get<std::string>(), m.at(4).get<bool>()});
    for (const auto& c : j.at("classes"))
      AddClass(c.at(0).get<std::vector<std::string>>(), c.at(1).get<bool>());
    for (const auto& c : j.at("comms")) {
      CommIdentity id;
      id.inter = c.at(0).get<bool>();
      id.a = c.at(1).get<std::vector<int32_t>>();
      id.b = c.at(2).get<std::vector<int32_t>>();
      id.k = c.at(3).get<int>();
      AddComm(id);
    }
    for (const auto& l : j.at("contexts")) AddContext(l.get<std::string>());
    for (const auto& e : j.at("errors")) errors.push_back(e.get<std::string>());
  }
};

// What one rank contributes: its functions, counters, sampler metrics and communicators.
void LocalDefs(const std::string& run_dir, const RawRank& rank, DefSet* d,
               std::vector<std::string>* problems) {
  for (size_t i = 0; i < rank.func_names.size(); ++i)
    d->AddRegion({rank.func_names[i], rank.func_kinds[i], rank.func_classes[i]});
  if (!rank.counter_names.empty()) {
    std::vector<std::string> keys;
    for (size_t i = 0; i < rank.counter_names.size() && i < 3; ++i) {
      const RawMetric m{rank.counter_names[i],
                        i < rank.counter_units.size() ? rank.counter_units[i] : "", "counters",
                        "value at MPI call entry and exit", true};
      d->AddMember(m);
      keys.push_back(MemberKey(m));
    }
    d->AddClass(keys, true);
  }
  RawSamples s;
  std::vector<std::string> ignored;  // the write step loads them again and reports
  if (LoadRawSamples(run_dir, rank.rank, &s, &ignored) && !s.metrics.empty() && s.size() > 0)
    for (size_t first = 0; first < s.metrics.size(); first += kMaxPerClass) {
      std::vector<std::string> keys;
      for (size_t k = first; k < std::min(s.metrics.size(), first + kMaxPerClass); ++k) {
        d->AddMember(s.metrics[k]);
        keys.push_back(MemberKey(s.metrics[k]));
      }
      d->AddClass(keys, false);
    }
  RankTraceSites sites;
  if (LoadTraceSites(run_dir, rank.rank, &sites, problems))
    for (const std::string& l : sites.labels) d->AddContext(l);
  for (const CommIdentity& c : RankCommIdentities(rank)) {
    d->AddComm(c);
    if (std::find(c.a.begin(), c.a.end(), rank.rank) == c.a.end() &&
        std::find(c.b.begin(), c.b.end(), rank.rank) == c.b.end())
      problems->push_back("raw/" + DefsFileName(rank.rank) + ": communicator " +
                          std::to_string(c.local) + " does not list rank " +
                          std::to_string(rank.rank) + " among its members");
  }
}

// The tables of the conversion filled from the unified definitions, in their order, so that
// the serial steps find every name already defined.
void Seed(const DefSet& d, const RawRank& rank, int32_t world_size, Conversion* c) {
  c->invmw_regions = conv::DefineInvmwRegions(&c->regions);
  for (const auto& f : d.regions)
    c->regions.Ref(f.name, ClassifyFunction(f.name, f.kind, f.cls).role, OTF2_REGION_FLAG_NONE);
  for (const auto& m : d.members) c->metric_defs.MemberRef(m);
  for (const auto& l : d.contexts) c->contexts.Ref(l);
  for (const auto& [keys, sync] : d.classes) {
    std::vector<uint32_t> refs;
    for (const auto& k : keys) refs.push_back(c->metric_defs.member_of.at(k));
    c->metric_defs.ClassRef(refs, sync);
  }
  std::string problem;
  if (!c->comms.Assign(world_size, d.comms, rank, &problem)) throw std::runtime_error(problem);
}

json LocationJson(const LocationOut& l) {
  return {l.id,           l.name,        l.rank,      l.events,
          l.first_global, l.last_global, int(l.type), l.metric_classes};
}

LocationOut LocationFrom(const json& j) {
  LocationOut l;
  l.id = j.at(0).get<uint64_t>();
  l.name = j.at(1).get<std::string>();
  l.rank = j.at(2).get<int32_t>();
  l.events = j.at(3).get<uint64_t>();
  l.first_global = j.at(4).get<uint64_t>();
  l.last_global = j.at(5).get<uint64_t>();
  l.type = OTF2_LocationType(j.at(6).get<int>());
  l.metric_classes = j.at(7).get<std::vector<uint32_t>>();
  return l;
}

}  // namespace

ParallelResult ConvertToOtf2Parallel(const std::string& run_dir, ParallelTransport* t,
                                     const ConvertOptions& options, int test_fail_rank) {
  const double cpu0 = ThreadCpuSeconds();
  ParallelResult out;
  const int me = t->rank(), n = t->size();
  std::string error;  // this rank's first failure
  auto fail = [&](const std::string& e) {
    if (error.empty()) error = "rank " + std::to_string(me) + ": " + e;
  };
  IgnoreSigxfsz sigxfsz;

  // 1. This rank's defs, and what it contributes to the unified definitions.
  Conversion c;
  c.run_dir = run_dir;
  c.run.dir = run_dir;
  c.run.world_size = n;
  c.result.world_size = n;
  c.run.ranks.emplace_back();
  RawRank& rank = c.run.ranks.front();
  DefSet defs;
  try {
    std::string why;
    if (!options.IsValid(&why)) throw std::invalid_argument(why);
    if (!LoadRankDefs(run_dir, me, &rank, &c.result.problems))
      throw std::runtime_error("raw/" + DefsFileName(me) + " unusable" +
                               (c.result.problems.empty() ? "" : ": " + c.result.problems.back()));
    if (rank.world_size != n)
      throw std::runtime_error("raw/" + DefsFileName(me) + " says world size " +
                               std::to_string(rank.world_size) + ", the job has " +
                               std::to_string(n));
    LocalDefs(run_dir, rank, &defs, &c.result.problems);
  } catch (const std::exception& e) {
    fail(e.what());
    defs.errors.push_back(error);
  }

  // 2. Unified definitions: reduced up the tree, rank 0's result sent to every rank.
  std::string text = Dump(defs.ToJson());
  bool comm_ok = true;
  {
    // Binomial tree: a rank takes in its children (the rank ranges right of it, nearest first),
    // then hands the whole to its parent; so sets are merged in rank order.
    for (int mask = 1; mask < n; mask <<= 1) {
      if (me & mask) {
        comm_ok = t->Send(me - mask, text) && comm_ok;
        break;
      }
      if (me + mask < n) {
        std::string child;
        if (!t->Recv(me + mask, &child)) {
          comm_ok = false;
          continue;
        }
        try {
          defs.Merge(json::parse(child));
        } catch (const std::exception& e) {
          fail(std::string("definitions from rank ") + std::to_string(me + mask) +
               " unreadable: " + e.what());
        }
        text = Dump(defs.ToJson());
      }
    }
  }
  if (!t->Bcast(&text, 0)) comm_ok = false;
  if (!comm_ok) fail("the definitions could not be exchanged");
  DefSet unified;
  try {
    unified.Merge(json::parse(text));
    if (error.empty()) Seed(unified, rank, n, &c);
  } catch (const std::exception& e) {
    fail(std::string("unified definitions unusable: ") + e.what());
  }
  if (!t->AllOk(error.empty())) {
    out.error = !error.empty() ? error
                : !unified.errors.empty()
                    ? unified.errors.front()
                    : "a rank could not take part in exchanging the definitions";
    out.cpu_s = ThreadCpuSeconds() - cpu0;
    return out;
  }

  // 3. The archive, under a temporary name rank 0 chooses, opened by every rank.
  std::unique_ptr<TempArchive> temp;
  std::string name;
  if (me == 0) {
    try {
      temp = std::make_unique<TempArchive>(run_dir, options.archive_name);
      name = temp->name();
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  if (!t->Bcast(&name, 0)) fail("the archive name could not be sent");
  OTF2_Archive* archive = nullptr;
  if (!name.empty() && error.empty()) {
    try {
      archive = OpenArchiveForCollectiveWriting(run_dir, name, options.chunk_size_events,
                                                options.chunk_size_defs, t->Otf2Callbacks(),
                                                t->Otf2Data());
      if (OTF2_Archive_SetCreator(archive, "invmw trace convert") != OTF2_SUCCESS ||
          OTF2_Archive_SetDescription(archive, "MPI trace recorded by invmw (LD_PRELOAD)") !=
              OTF2_SUCCESS)
        fail("OTF2_Archive_SetCreator/SetDescription failed");
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  if (!t->AllOk(archive != nullptr && error.empty())) {
    // Nobody wrote anything; rank 0's TempArchive removes what the opening created. An archive
    // opened here is released without its collective close, which the others do not make.
    out.error = !error.empty() ? error : "the archive could not be opened on every rank";
    out.cpu_s = ThreadCpuSeconds() - cpu0;
    return out;
  }

  // 4. This rank's locations: events, then local definitions. The collective open and close
  // calls are made whatever happens in between.
  auto step = [&](OTF2_ErrorCode rc, const char* what) {
    if (rc != OTF2_SUCCESS)
      fail(std::string("OTF2 error in ") + what + ": " + OTF2_Error_GetName(rc) + " (" +
           OTF2_Error_GetDescription(rc) + ")");
  };
  step(OTF2_Archive_OpenEvtFiles(archive), "OpenEvtFiles");
  if (error.empty()) {
    try {
      conv::TakeRankClockAndDrops(rank, &c);
      conv::WriteRankEvents(archive, &rank, &c);
      conv::WriteRankSamples(archive, rank, &c);
      c.result.ranks_converted = 1;
      if (me == test_fail_rank) fail("failure injected (INVMW_TRACE_TEST_PARALLEL_FAIL)");
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  step(OTF2_Archive_CloseEvtFiles(archive), "CloseEvtFiles");
  step(OTF2_Archive_OpenDefFiles(archive), "OpenDefFiles");
  if (error.empty()) {
    try {
      conv::WriteLocationDefs(archive, &c);
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  step(OTF2_Archive_CloseDefFiles(archive), "CloseDefFiles");
  for (const auto& l : c.locations) out.rank_events += l.events;

  // 5. Locations and figures gathered up the tree, in rank order, for rank 0's global
  // definitions.
  json mine = json::array();
  {
    json r = {{"rank", me},
              {"host", rank.host},
              {"error", error},
              {"records_in", c.result.records_in},
              {"events_out", c.result.events_out},
              {"metric_events", c.result.metric_events},
              {"partial", c.result.partial},
              {"dropped_events", c.result.dropped_events},
              {"dropped_calls", c.result.dropped_calls},
              {"dropped_requests", c.result.dropped_requests},
              {"problems", c.result.problems},
              {"locations", json::array()}};
    for (const auto& l : c.locations) r["locations"].push_back(LocationJson(l));
    mine.push_back(std::move(r));
  }
  comm_ok = true;
  for (int mask = 1; mask < n; mask <<= 1) {
    if (me & mask) {
      comm_ok = t->Send(me - mask, Dump(mine)) && comm_ok;
      break;
    }
    if (me + mask < n) {
      std::string child;
      if (!t->Recv(me + mask, &child)) {
        comm_ok = false;
        continue;
      }
      try {
        for (auto& r : json::parse(child)) mine.push_back(std::move(r));
      } catch (const std::exception& e) {
        fail(std::string("figures from rank ") + std::to_string(me + mask) +
             " unreadable: " + e.what());
      }
    }
  }
  if (!comm_ok) fail("the locations could not be gathered");

  // 6. Rank 0: the global definitions over every rank's locations.
  std::string first_error = error;
  if (me == 0 && error.empty()) {
    try {
      ConvertResult& res = c.result;
      res = ConvertResult{};
      res.world_size = n;
      c.locations.clear();
      std::vector<RawRank> others;
      for (const auto& r : mine) {
        if (!r.at("error").get<std::string>().empty()) {
          if (first_error.empty()) first_error = r.at("error").get<std::string>();
          continue;
        }
        const int32_t rr = r.at("rank").get<int32_t>();
        if (rr != 0) {
          others.emplace_back();
          others.back().rank = rr;
          others.back().host = r.at("host").get<std::string>();
        }
        res.ranks_converted += 1;
        res.records_in += r.at("records_in").get<uint64_t>();
        res.events_out += r.at("events_out").get<uint64_t>();
        res.metric_events += r.at("metric_events").get<uint64_t>();
        res.partial = res.partial || r.at("partial").get<bool>();
        res.dropped_events += r.at("dropped_events").get<uint64_t>();
        res.dropped_calls += r.at("dropped_calls").get<uint64_t>();
        res.dropped_requests += r.at("dropped_requests").get<uint64_t>();
        for (const auto& p : r.at("problems")) res.problems.push_back(p.get<std::string>());
        for (const auto& l : r.at("locations")) c.locations.push_back(LocationFrom(l));
      }
      // A rank that failed has said why (first_error); the others' figures went missing.
      if (res.ranks_converted != n && first_error.empty())
        fail("the figures of some ranks did not arrive");
      if (res.ranks_converted == n) {
        for (auto& o : others) c.run.ranks.push_back(std::move(o));
        conv::WriteGlobalDefs(archive, &c);
        conv::WriteProperties(archive, run_dir, res);
      }
    } catch (const std::exception& e) {
      fail(e.what());
      if (first_error.empty()) first_error = error;
    }
  }
  step(OTF2_Archive_Close(archive), "Archive_Close");

  // 7. The archive takes its name only when every rank's part is complete.
  out.ok = t->AllOk(error.empty() && first_error.empty());
  if (me == 0 && out.ok) {
    try {
      if (const std::string w = temp->Replace(); !w.empty()) c.result.problems.push_back(w);
      c.result.archive = run_dir + "/" + options.archive_name + ".otf2";
      out.result = c.result;
    } catch (const std::exception& e) {
      out.ok = false;
      fail(e.what());
    }
  }
  if (!out.ok) {
    const std::string otf2 = TakeOtf2Error();
    out.error = !error.empty()         ? error
                : !first_error.empty() ? first_error
                                       : "another rank failed to write its part";
    if (!otf2.empty()) out.error += "; OTF2: " + otf2;
  }
  out.cpu_s = ThreadCpuSeconds() - cpu0;
  return out;
}

}  // namespace invmw::otf2
