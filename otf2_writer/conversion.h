// The serial converter's pieces that the parallel writer (parallel_convert.h) reuses: the
// definition tables both build, and the steps that write one rank's locations, the local and the
// global definitions.
//
// Why shared: the parallel writer must produce exactly the archive of the serial converter; it
// differs only in who writes which location and in how the definition tables are filled (a
// reduction over the ranks instead of one pass over every rank's files). Seeding the tables
// with the unified definitions makes the serial steps below return the global references.
//
// Contract: the write functions throw std::runtime_error on an OTF2 failure (as converter.h).
#pragma once

#include <otf2/otf2.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "otf2_writer/clock_model.h"
#include "otf2_writer/comm_map.h"
#include "otf2_writer/converter.h"
#include "otf2_writer/raw_run.h"
#include "otf2_writer/raw_samples.h"

namespace invmw::otf2::conv {

struct Region {
  std::string name;
  OTF2_RegionRole role;
  OTF2_RegionFlag flags;
};

struct LocationOut {
  uint64_t id = 0;
  std::string name;
  int32_t rank = 0;
  uint64_t events = 0;
  uint64_t first_global = UINT64_MAX, last_global = 0;
  OTF2_LocationType type = OTF2_LOCATION_TYPE_CPU_THREAD;
  std::vector<uint32_t> metric_classes;  // metric locations: the classes they record
};

// The sampler's metrics of all ranks: members shared across ranks (by name, unit and mode),
// classes per distinct member set (OTF2 allows at most 255 members per class, so a larger set
// is split into several classes, each written as its own Metric event per sample).
struct MetricDefs {
  struct Member {
    std::string name, unit, description;
    bool accumulated, hardware;
  };
  std::vector<Member> members;
  std::map<std::string, uint32_t> member_of;
  std::vector<std::vector<uint32_t>> classes;
  std::vector<bool> synchronous;  // per class: per-call counters (else the sampler's series)
  std::map<std::pair<std::vector<uint32_t>, bool>, uint32_t> class_of;

  uint32_t MemberRef(const RawMetric& m) {
    const std::string key = m.name + "\n" + m.unit + (m.accumulated ? "\na" : "\nb");
    auto [it, added] = member_of.emplace(key, uint32_t(members.size()));
    if (added)
      members.push_back({m.name, m.unit, m.description, m.accumulated,
                         m.source == "counters" && m.name.rfind("counters.PAPI_", 0) == 0});
    return it->second;
  }
  uint32_t ClassRef(const std::vector<uint32_t>& set, bool sync = false) {
    auto [it, added] = class_of.emplace(std::make_pair(set, sync), uint32_t(classes.size()));
    if (added) {
      classes.push_back(set);
      synchronous.push_back(sync);
    }
    return it->second;
  }
};

// Regions: one per function name across ranks, plus invmw's own.
class RegionTable {
 public:
  OTF2_RegionRef Ref(const std::string& n, OTF2_RegionRole role, OTF2_RegionFlag flags) {
    auto [it, added] = region_of_.emplace(n, OTF2_RegionRef(regions_.size()));
    if (added) regions_.push_back({n, role, flags});
    return it->second;
  }
  const std::vector<Region>& regions() const { return regions_; }

 private:
  std::vector<Region> regions_;
  std::map<std::string, OTF2_RegionRef> region_of_;
};

// Calling contexts of call sites, one per object+offset label across ranks (trace_callsites.h),
// in the order the ranks name them, so that the parallel writer's unified table equals the
// serial converter's.
class ContextTable {
 public:
  uint32_t Ref(const std::string& label) {
    auto [it, added] = of_.emplace(label, uint32_t(labels_.size()));
    if (added) labels_.push_back(label);
    return it->second;
  }
  const std::vector<std::string>& labels() const { return labels_; }

 private:
  std::vector<std::string> labels_;
  std::map<std::string, uint32_t> of_;
};

// invmw's artificial regions, defined before any function so their references are fixed.
struct InvmwRegions {
  OTF2_RegionRef flush, pause, init;
};

// What the event pass over the ranks collects for the definitions, which OTF2 takes after all
// events: regions, metrics, clocks and locations, and the result so far.
struct Conversion {
  std::string run_dir;
  RawRun run;
  CommMap comms;
  RegionTable regions;
  InvmwRegions invmw_regions;
  MetricDefs metric_defs;
  ContextTable contexts;
  std::map<int32_t, ClockModel> clocks;
  std::vector<LocationOut> locations;
  std::vector<uint64_t> empty_locations;  // ranks that left no usable defs
  ConvertResult result;
};

InvmwRegions DefineInvmwRegions(RegionTable* regions);
// The rank's call-site labels into c->contexts (before any rank's events are written).
void AddRankContexts(const RawRank& rank, Conversion* c);
// The rank's clock model into c->clocks, its drops and partial flag into c->result.
void TakeRankClockAndDrops(const RawRank& rank, Conversion* c);
// The rank's MPI events on its thread locations (appended to c->locations); loads and frees
// the rank's events.
void WriteRankEvents(OTF2_Archive* archive, RawRank* rank, Conversion* c);
// The rank's sampler series, if any, on its metric location.
void WriteRankSamples(OTF2_Archive* archive, const RawRank& rank, Conversion* c);
// Each location of c->locations (and c->empty_locations): its clock offsets.
void WriteLocalDefs(OTF2_Archive* archive, Conversion* c);
// The same, between OTF2_Archive_OpenDefFiles and _CloseDefFiles the caller makes.
void WriteLocationDefs(OTF2_Archive* archive, Conversion* c);
// The global definitions of c: clock properties, strings, regions, metrics, system tree,
// locations, groups, communicators. c->run.ranks.front() must be rank 0 (the reference clock);
// the other ranks are needed only for their rank and host.
void WriteGlobalDefs(OTF2_Archive* archive, Conversion* c);
void WriteProperties(OTF2_Archive* archive, const std::string& run_dir,
                     const ConvertResult& result);

}  // namespace invmw::otf2::conv
