// Converter, reader, export and check on synthetic runs whose correct result is known.
#include "otf2_writer/converter.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/subprocess.h"
#include "otf2_reader/perfetto_export.h"
#include "common/event_format.h"
#include "common/sample_format.h"
#include "otf2_writer/callsite_names.h"
#include "otf2_writer/raw_run.h"
#include "otf2_writer/tests/synthetic_run.h"
#include "otf2_reader/trace_check.h"
#include "otf2_reader/trace_reader.h"

namespace invmw::otf2 {
namespace {
namespace fs = std::filesystem;
using testing::Expected;
using testing::SyntheticOptions;

std::string TempDir(const std::string& name) {
  return (fs::temp_directory_path() / ("invmw-conv-" + name + "-" + std::to_string(::getpid())))
      .string();
}

// Runs argv (no shell: the paths are passed as they are); returns its exit status and what it
// printed on stdout and stderr.
int RunArgv(const std::vector<std::string>& argv, std::string* out) {
  SubprocessResult r = RunCapture(argv);
  *out = r.started ? r.output : r.error;
  return r.started && WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1;
}

// What `invmw trace check` and `invmw trace export` run on an archive.
CheckReport CheckArchive(const std::string& anchor, size_t max_listed = 10) {
  Trace d = ReadTraceDefinitions(anchor);
  return CheckTraceStreaming(&d, max_listed);
}
PerfettoStats ExportArchive(const std::string& anchor, const std::string& out) {
  Trace d = ReadTraceDefinitions(anchor);
  return ExportPerfettoStreaming(&d, out);
}

// Rewrites a raw file of fixed-size records after its header (events-*.bin, samples-*.bin):
// `edit` may change a record in place, and drops it by returning false.
template <class Header>
void EditRawRecords(const std::string& file, const std::function<bool(char* record)>& edit) {
  std::vector<char> bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  Header h;
  ASSERT_GE(bytes.size(), sizeof h) << file;
  std::memcpy(&h, bytes.data(), sizeof h);
  ASSERT_GT(h.record_size, 0u);
  std::vector<char> out(bytes.begin(), bytes.begin() + h.header_size);
  for (size_t at = h.header_size; at + h.record_size <= bytes.size(); at += h.record_size)
    if (edit(bytes.data() + at))
      out.insert(out.end(), bytes.begin() + at, bytes.begin() + at + h.record_size);
  std::ofstream o(file, std::ios::binary | std::ios::trunc);
  o.write(out.data(), std::streamsize(out.size()));
  ASSERT_TRUE(o.good()) << file;
}

// Removes the first record of a raw events file for which `match` holds; false when none does.
bool DropFirstEvent(const std::string& file,
                    const std::function<bool(const trace::EventRecord&)>& match) {
  bool removed = false;
  EditRawRecords<trace::EventFileHeader>(file, [&](char* rec) {
    trace::EventRecord e;
    std::memcpy(&e, rec, sizeof e);
    if (removed || !match(e)) return true;
    removed = true;
    return false;
  });
  return removed;
}

std::map<std::string, uint64_t> CountByType(const Trace& t) {
  std::map<std::string, uint64_t> m;
  for (const auto& l : t.locations)
    for (const auto& e : l.events) m[EventTypeName(e.type)]++;
  return m;
}
std::map<int32_t, std::map<std::string, uint64_t>> CountByRank(const Trace& t) {
  std::map<int32_t, std::map<std::string, uint64_t>> m;
  for (const auto& l : t.locations)
    for (const auto& e : l.events) m[l.rank][EventTypeName(e.type)]++;
  return m;
}

class ConvertedRun : public ::testing::Test {
 protected:
  void Make(const SyntheticOptions& o, const std::string& name) {
    opts_ = o;
    dir_ = TempDir(name);
    expected_ = testing::WriteSyntheticRun(dir_, o);
    result_ = ConvertToOtf2(dir_);
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }
  std::string Archive() const { return dir_ + "/traces.otf2"; }

  SyntheticOptions opts_;
  std::string dir_;
  Expected expected_;
  ConvertResult result_;
};

TEST_F(ConvertedRun, OwnReaderSeesExactlyTheSyntheticRun) {
  SyntheticOptions o;
  o.iterations = 3;
  Make(o, "own");
  EXPECT_TRUE(result_.problems.empty()) << result_.problems.front();
  EXPECT_FALSE(result_.partial);
  EXPECT_EQ(result_.records_in, expected_.records);
  EXPECT_EQ(result_.locations, 4u);

  Trace t = ReadTrace(Archive());
  EXPECT_EQ(t.timer_resolution, 1000000000u);
  EXPECT_NEAR(double(t.global_offset), double(o.base_ticks), 2.0);  // MPI_Init enter, true time 0
  EXPECT_NE(t.realtime_ns, 0u);
  EXPECT_EQ(t.properties["INVMW::PARTIAL"], "false");
  EXPECT_EQ(t.properties["INVMW::DROPPED_EVENTS"], "0");
  EXPECT_EQ(CountByType(t), expected_.by_type);
  EXPECT_EQ(CountByRank(t), expected_.by_rank);
  uint64_t total = 0;
  for (const auto& [type, n] : expected_.by_type) total += n;
  EXPECT_EQ(result_.events_out, total);

  // Every message found, with its bytes and tag, at its true (corrected) times.
  ASSERT_EQ(t.messages.size(), expected_.messages.size());
  EXPECT_TRUE(t.unmatched_sends.empty());
  EXPECT_TRUE(t.unmatched_recvs.empty());
  auto want = expected_.messages;
  std::sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.send_true < b.send_true; });
  for (size_t i = 0; i < want.size(); ++i) {
    const Message& m = t.messages[i];
    SCOPED_TRACE("message " + std::to_string(i));
    EXPECT_EQ(m.src, want[i].src);
    EXPECT_EQ(m.dst, want[i].dst);
    EXPECT_EQ(m.tag, want[i].tag);
    EXPECT_EQ(m.bytes, want[i].bytes);
    EXPECT_EQ(m.recv_bytes, want[i].bytes);
    const auto& se = t.locations[m.send_loc].events[m.send_event];
    const auto& re = t.locations[m.recv_loc].events[m.recv_event];
    EXPECT_NEAR(double(se.ticks), double(o.base_ticks + want[i].send_true), 2.0);
    EXPECT_NEAR(double(re.ticks), double(o.base_ticks + want[i].recv_true), 2.0);
    EXPECT_GE(m.recv_time, m.send_time);
  }
  CheckReport r = CheckArchive(Archive());
  EXPECT_TRUE(r.ok) << (r.failures.empty() ? "" : r.failures.front());
  // The measured offset uncertainty (40 ticks at 1 GHz in every rank's clock lines) reaches
  // the reader, for the causality check's tolerance.
  for (const auto& l : t.locations) EXPECT_NEAR(l.clock_uncertainty_s, 40e-9, 1e-12) << l.name;
}

// The injected offsets must matter, or the causality checks above would prove nothing.
TEST_F(ConvertedRun, UncorrectedClocksWouldBreakCausality) {
  Make(SyntheticOptions{}, "raw-causality");
  RawRun run = LoadRawRun(dir_);
  auto local = [&](int r, uint64_t g) {
    return int64_t(opts_.base_ticks + g) + opts_.offsets[r] +
           std::llround(opts_.drift[r] * double(g));
  };
  int violated = 0;
  for (const auto& m : expected_.messages)
    violated += local(m.dst, m.recv_true) < local(m.src, m.send_true);
  EXPECT_GT(violated, 0);
}

// Worst distance, in ticks, between each message's receive completion as read back and its
// true time. Messages are paired with the expected ones by (src, dst, tag) in send order.
double WorstReceiveError(const Trace& t, const Expected& e, uint64_t base) {
  std::map<std::tuple<int32_t, int32_t, uint32_t>, std::vector<uint64_t>> truth;
  auto want = e.messages;
  std::sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.send_true < b.send_true; });
  for (const auto& w : want) truth[{w.src, w.dst, w.tag}].push_back(base + w.recv_true);
  std::map<std::tuple<int32_t, int32_t, uint32_t>, size_t> next;
  double worst = 0;
  for (const auto& m : t.messages) {  // sorted by send time
    const auto key = std::make_tuple(m.src, m.dst, m.tag);
    const uint64_t true_recv = truth.at(key).at(next[key]++);
    worst = std::max(worst, std::fabs(double(t.locations[m.recv_loc].events[m.recv_event].ticks) -
                                      double(true_recv)));
  }
  return worst;
}

// Drift only shows when the finalize offset is used: with the init point alone, late messages
// land where a constant offset puts them, away from their true times.
TEST_F(ConvertedRun, FinalizeOffsetCorrectsDrift) {
  SyntheticOptions o;
  o.iterations = 20;
  o.drift = {0, 2e-3, -3e-3};
  o.finalize_clock = false;
  Make(o, "nodrift");
  const std::string first_dir = dir_;
  Trace without = ReadTrace(Archive());
  o.finalize_clock = true;
  Make(o, "drift");
  Trace with = ReadTrace(Archive());
  ASSERT_EQ(with.messages.size(), expected_.messages.size());
  ASSERT_EQ(without.messages.size(), expected_.messages.size());
  EXPECT_LE(WorstReceiveError(with, expected_, o.base_ticks), 2.0);
  EXPECT_GT(WorstReceiveError(without, expected_, o.base_ticks), 100.0);
  EXPECT_LT(WorstReceiveError(without, expected_, o.base_ticks),
            1e5);  // the init offset was applied
  EXPECT_TRUE(CheckArchive(Archive()).ok);
  if (!HasFailure()) fs::remove_all(first_dir);
}

// otf2-print (from otf2-tools) is an independent reader; its counts must match too.
TEST_F(ConvertedRun, Otf2PrintAgrees) {
  SyntheticOptions o;
  o.iterations = 2;
  Make(o, "print");
  std::string out;
  ASSERT_EQ(RunArgv({INVMW_OTF2_PRINT, Archive()}, &out), 0) << out;
  std::map<std::string, uint64_t> by_type;
  std::map<int32_t, std::map<std::string, uint64_t>> by_rank;
  std::map<uint64_t, uint64_t> last;
  std::map<int32_t, uint64_t> first_ts;
  std::istringstream in(out);
  std::string line;
  bool events = false;
  while (std::getline(in, line)) {
    if (line.rfind("-----", 0) == 0) {
      events = true;
      continue;
    }
    if (!events || line.empty() || !std::isupper(static_cast<unsigned char>(line[0]))) continue;
    std::istringstream ls(line);
    std::string kind;
    uint64_t loc, ts;
    if (!(ls >> kind >> loc >> ts)) continue;
    std::string name;  // MPI_ISEND_COMPLETE -> MpiIsendComplete
    bool up = true;
    for (char c : kind) {
      if (c == '_')
        up = true;
      else
        name += up ? char(std::toupper(c)) : char(std::tolower(c)), up = false;
    }
    const int32_t rank = int32_t(loc & 0xffffffffu);
    by_type[name]++;
    by_rank[rank][name]++;
    EXPECT_GE(ts, last[loc]) << line;
    last[loc] = ts;
    if (!first_ts.count(rank)) first_ts[rank] = ts;
  }
  EXPECT_EQ(by_type, expected_.by_type);
  EXPECT_EQ(by_rank, expected_.by_rank);
  // otf2-print applies the clock offsets: every rank's MPI_Init starts at the true time 0.
  for (const auto& [rank, ts] : first_ts)
    EXPECT_NEAR(double(ts), double(o.base_ticks), 2.0) << "rank " << rank;
}

TEST_F(ConvertedRun, PerfettoExportIsValidJsonWithSlicesAndFlows) {
  Make(SyntheticOptions{}, "perfetto");
  const std::string out = dir_ + "/trace.json";
  PerfettoStats st = ExportArchive(Archive(), out);
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);  // throws when not valid JSON
  uint64_t x = 0, s = 0, f = 0, procs = 0;
  std::map<uint64_t, int> ids;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "X") {
      ++x;
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
    } else if (ph == "s" || ph == "f") {
      (ph == "s" ? s : f)++;
      EXPECT_EQ(e.at("bp"), "e");
      ids[e.at("id").get<uint64_t>()]++;
    } else if (ph == "M" && e.at("name") == "process_name") {
      ++procs;
    }
  }
  EXPECT_EQ(x, expected_.slices);
  EXPECT_EQ(st.slices, expected_.slices);
  EXPECT_EQ(s, expected_.messages.size());
  EXPECT_EQ(f, expected_.messages.size());
  EXPECT_EQ(st.flows, expected_.messages.size());
  for (const auto& [id, n] : ids)
    EXPECT_EQ(n, 2) << "flow " << id << " needs one start and one end";
  EXPECT_EQ(procs, 3u);
}

// The export shows what the trace holds: each slice's MPI records (bytes, peer, tag,
// communicator) and coalesced-call counts as args (the metrics: PerfettoCountersFromSamplerFiles).
TEST_F(ConvertedRun, PerfettoSlicesCarryArgs) {
  SyntheticOptions o;
  o.iterations = 2;
  Make(o, "perfetto-args");
  Trace t = ReadTrace(Archive());
  const std::string out = dir_ + "/args.json";
  PerfettoStats st = ExportArchive(Archive(), out);
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);
  using Rec = std::tuple<int, int, uint32_t, uint64_t>;  // rank, peer, tag, bytes
  std::multiset<Rec> sends, recvs;
  uint64_t coalesced = 0, coalesced_calls = 0, with_args = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    ASSERT_TRUE(e.contains("name") && e.contains("pid")) << e.dump();
    if (ph != "X") continue;
    const auto& a = e.at("args");  // on every slice, as Chrome DevTools requires
    ASSERT_TRUE(a.is_object()) << e.dump();
    if (a.empty()) continue;
    ++with_args;
    if (a.contains("calls")) ++coalesced, coalesced_calls += a.at("calls").get<uint64_t>();
    std::vector<nlohmann::json> recs;
    if (a.contains("records"))
      for (const auto& r : a.at("records")) recs.push_back(r);
    else if (a.contains("record"))
      recs.push_back(a);
    for (const auto& r : recs) {
      const std::string type = r.at("record");
      if (type == "MpiSend" || type == "MpiIsend" || type == "MpiRecv" || type == "MpiIrecv") {
        EXPECT_EQ(r.at("communicator"), "MPI_COMM_WORLD") << e.dump();
        Rec x{e.at("pid"), r.at("peer"), r.at("tag"), r.at("bytes")};
        (type == "MpiSend" || type == "MpiIsend" ? sends : recvs).insert(x);
      }
    }
  }
  std::multiset<Rec> want_sends, want_recvs;
  for (const auto& m : expected_.messages) {
    want_sends.insert({m.src, m.dst, m.tag, m.bytes});
    want_recvs.insert({m.dst, m.src, m.tag, m.bytes});
  }
  EXPECT_EQ(sends, want_sends);
  EXPECT_EQ(recvs, want_recvs);
  EXPECT_EQ(st.slices_with_args, with_args);
  // Coalesced polls (the failed Tests on rank 2) as the reader saw them.
  uint64_t want_coalesced = 0, want_calls = 0;
  for (const auto& l : t.locations)
    for (const auto& e : l.events)
      if (e.type == TraceEvent::kEnter && e.calls > 1) ++want_coalesced, want_calls += e.calls;
  EXPECT_GT(want_coalesced, 0u);
  EXPECT_EQ(coalesced, want_coalesced);
  EXPECT_EQ(coalesced_calls, want_calls);
  EXPECT_EQ(st.counters, 0u);  // no sampler files, no per-call counters
}

// The sampler's files of a run, through converter and reader, become counter tracks at their
// corrected times, one track per metric; a value JSON cannot hold (NaN) is left out.
TEST_F(ConvertedRun, PerfettoCountersFromSamplerFiles) {
  SyntheticOptions o;
  o.samples = 3;
  Make(o, "perfetto-samples");
  EXPECT_TRUE(result_.problems.empty()) << result_.problems.front();
  // Rank 1's first proc.rss value made NaN in its sampler file, and the run converted again.
  const testing::ExpectedSample* nan_sample = nullptr;
  for (const auto& x : expected_.samples)
    if (!nan_sample && x.rank == 1) nan_sample = &x;
  ASSERT_NE(nan_sample, nullptr);
  bool patched = false;
  EditRawRecords<samples::SampleFileHeader>(
      dir_ + "/raw/" + samples::SamplesFileName(1), [&](char* rec) {
        auto* values = reinterpret_cast<double*>(rec + sizeof(samples::SampleRecordHead));
        if (!patched && values[0] == nan_sample->cpu_user && values[1] == nan_sample->rss) {
          values[1] = std::nan("");
          patched = true;
        }
        return true;
      });
  ASSERT_TRUE(patched);
  result_ = ConvertToOtf2(dir_);
  EXPECT_TRUE(result_.problems.empty()) << result_.problems.front();
  const std::string out = dir_ + "/samples.json";
  PerfettoStats st = ExportArchive(Archive(), out);
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);
  using Point = std::tuple<int, std::string, double, double>;  // rank, track, ts (us), value
  std::vector<Point> got, want;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "C")
      got.emplace_back(e.at("pid"), e.at("name"), e.at("ts"), e.at("args").at("value"));
  for (const auto& x : expected_.samples) {
    const double us = double(x.true_ticks) / o.ticks_per_second * 1e6;
    want.emplace_back(x.rank, "proc.cpu.user (s)", us, x.cpu_user);
    if (&x != nan_sample) want.emplace_back(x.rank, "proc.rss (bytes)", us, x.rss);
  }
  ASSERT_EQ(want.size(), 17u);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(st.counters, want.size());
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::get<0>(got[i]), std::get<0>(want[i]));
    EXPECT_EQ(std::get<1>(got[i]), std::get<1>(want[i]));
    EXPECT_NEAR(std::get<2>(got[i]), std::get<2>(want[i]), 0.01);  // corrected to a few ticks
    EXPECT_DOUBLE_EQ(std::get<3>(got[i]), std::get<3>(want[i]));
  }
}

// Rank 1 cancels one receive per iteration: MpiRequestCancelled stands in for its MpiIrecv,
// so started == completed + cancelled and there is nothing to warn about; without the
// cancellation record the same counts do warrant the warning.
TEST_F(ConvertedRun, CancelledReceivesAreNoMissingCompletions) {
  SyntheticOptions o;
  o.iterations = 2;
  Make(o, "cancelled");
  auto irecv_warnings = [](const CheckReport& r) {
    std::vector<std::string> w;
    for (const auto& s : r.warnings)
      if (s.find("MpiIrecvRequest but") != std::string::npos) w.push_back(s);
    return w;
  };
  CheckReport r = CheckArchive(Archive());
  EXPECT_EQ(r.by_rank[1]["MpiRequestCancelled"], 2u);
  EXPECT_EQ(r.by_rank[1]["MpiIrecvRequest"], 2u);
  EXPECT_TRUE(irecv_warnings(r).empty()) << irecv_warnings(r).front();

  // One cancellation fewer: one receive left open.
  ASSERT_TRUE(
      DropFirstEvent(dir_ + "/raw/" + EventsFileName(1, 0),
                     [](const trace::EventRecord& e) { return e.type == trace::kCancelled; }));
  result_ = ConvertToOtf2(dir_);
  r = CheckArchive(Archive());
  EXPECT_EQ(r.by_rank[1]["MpiRequestCancelled"], 1u);
  ASSERT_EQ(irecv_warnings(r).size(), 1u);
  EXPECT_NE(irecv_warnings(r)[0].find("rank 1: 2 MpiIrecvRequest but 0 MpiIrecv and 1 cancelled"),
            std::string::npos)
      << irecv_warnings(r)[0];
}

TEST_F(ConvertedRun, CheckFailsOnAnUnmatchedSend) {
  SyntheticOptions o;
  o.unmatched_send = true;
  Make(o, "unmatched");
  Trace t = ReadTrace(Archive());
  EXPECT_EQ(t.unmatched_sends.size(), 1u);
  CheckReport r = CheckArchive(Archive());
  EXPECT_FALSE(r.ok);
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures.front().find("send without a matching receive"), std::string::npos);
}

TEST_F(ConvertedRun, CrashedRunIsRecoveredAndMarkedPartial) {
  SyntheticOptions o;
  o.crash = true;
  o.drift[2] = 0;  // rank 2 died before its finalize offset: only a constant offset is known
  Make(o, "crash");
  EXPECT_TRUE(result_.partial);
  bool cut = false;
  for (const auto& p : result_.problems)
    cut |= p.find("events-000002-000.bin: last record cut short") != std::string::npos;
  EXPECT_TRUE(cut);
  Trace t = ReadTrace(Archive());
  EXPECT_EQ(t.properties["INVMW::PARTIAL"], "true");
  EXPECT_EQ(CountByType(t), expected_.by_type);
  CheckReport r = CheckArchive(Archive());
  EXPECT_TRUE(r.ok) << (r.failures.empty() ? "" : r.failures.front());
  EXPECT_FALSE(r.warnings.empty());
}

TEST_F(ConvertedRun, MissingEventFileStillConverts) {
  dir_ = TempDir("missingfile");
  expected_ = testing::WriteSyntheticRun(dir_);
  fs::remove(fs::path(dir_) / "raw" / EventsFileName(1, 0));
  result_ = ConvertToOtf2(dir_);
  bool named = false;
  for (const auto& p : result_.problems)
    named |= p.find("events-000001-000.bin: missing") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_TRUE(result_.partial);  // every rank ended cleanly, but rank 1's events are lost
  Trace t = ReadTrace(Archive());
  EXPECT_EQ(t.properties["INVMW::PARTIAL"], "true");
  EXPECT_EQ(t.locations_of_rank.at(1).size(), 1u);
  EXPECT_TRUE(t.locations[t.locations_of_rank.at(1)[0]].events.empty());
  EXPECT_FALSE(t.unmatched_sends.empty());  // rank 1's partners now lack their other half
}

TEST_F(ConvertedRun, CutRecordOrBadDefsLineOfACleanRunMarksThePartial) {
  dir_ = TempDir("damaged");
  expected_ = testing::WriteSyntheticRun(dir_);
  result_ = ConvertToOtf2(dir_);
  ASSERT_FALSE(result_.partial);
  const fs::path events = fs::path(dir_) / "raw" / EventsFileName(0, 0);
  fs::resize_file(events, fs::file_size(events) - 10);
  result_ = ConvertToOtf2(dir_);
  EXPECT_TRUE(result_.partial);
  EXPECT_EQ(ReadTrace(Archive()).properties["INVMW::PARTIAL"], "true");

  dir_ = TempDir("damaged-defs");
  expected_ = testing::WriteSyntheticRun(dir_);
  std::ofstream(fs::path(dir_) / "raw" / DefsFileName(1), std::ios::app) << "garbage{\n";
  result_ = ConvertToOtf2(dir_);
  EXPECT_TRUE(result_.partial);
  bool named = false;
  for (const auto& p : result_.problems)
    named |= p.find(":") != std::string::npos && p.find("unusable line") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST_F(ConvertedRun, MissingRankKeepsAnEmptyLocationAndMarksThePartial) {
  dir_ = TempDir("missingrank");
  expected_ = testing::WriteSyntheticRun(dir_);
  fs::remove(fs::path(dir_) / "raw" / DefsFileName(1));
  result_ = ConvertToOtf2(dir_);
  EXPECT_TRUE(result_.partial);
  EXPECT_EQ(result_.ranks_converted, 2);
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "traces" / (std::to_string(LocationId(1, 0)) + ".def")));
  Trace t = ReadTrace(Archive());
  ASSERT_EQ(t.locations_of_rank.count(1), 1u);
  EXPECT_TRUE(t.locations[t.locations_of_rank.at(1)[0]].events.empty());
  EXPECT_EQ(t.properties["INVMW::PARTIAL"], "true");
  EXPECT_FALSE(CheckArchive(Archive()).ok);  // rank 0 and 2 talked to rank 1
}

TEST_F(ConvertedRun, CommandLineVerbs) {
  Make(SyntheticOptions{}, "cli");
  const std::string bin = INVMW_BIN;
  std::string out;
  EXPECT_EQ(RunArgv({bin, "trace", "convert", dir_}, &out), 0) << out;
  EXPECT_EQ(RunArgv({bin, "trace", "check", dir_}, &out), 0) << out;
  EXPECT_NE(out.find("check passed"), std::string::npos);
  EXPECT_NE(out.find("MpiIrecv"), std::string::npos);
  EXPECT_EQ(
      RunArgv({bin, "trace", "export", "--format", "perfetto", dir_, "-o", dir_ + "/p.json"}, &out),
      0)
      << out;
  EXPECT_TRUE(fs::exists(dir_ + "/p.json"));
  EXPECT_EQ(RunArgv({bin, "trace", "export", "--format", "svg", dir_}, &out), 2);
  EXPECT_EQ(RunArgv({bin, "trace", "check", dir_ + "/nonexistent"}, &out), 2);
  EXPECT_NE(out.find("nonexistent"), std::string::npos);

  // A corrupted run: check fails with status 1.
  SyntheticOptions bad;
  bad.unmatched_send = true;
  testing::WriteSyntheticRun(dir_, bad);
  EXPECT_EQ(RunArgv({bin, "trace", "recover", dir_}, &out), 0) << out;  // complete, though wrong
  EXPECT_EQ(RunArgv({bin, "trace", "check", dir_}, &out), 1) << out;
  EXPECT_NE(out.find("FAILED"), std::string::npos);

  SyntheticOptions crash;
  crash.crash = true;
  crash.drift[2] = 0;
  testing::WriteSyntheticRun(dir_, crash);
  EXPECT_EQ(RunArgv({bin, "trace", "recover", dir_}, &out), 1) << out;  // partial
  EXPECT_NE(out.find("partial"), std::string::npos);
}

}  // namespace
}  // namespace invmw::otf2

namespace invmw::otf2 {
namespace {

// A nonblocking send whose completion record is missing (a request freed with
// MPI_Request_free) is a warning for its rank; the receives, all completed, are not.
TEST_F(ConvertedRun, WarnsOnANonblockingStartWithoutCompletion) {
  Make(SyntheticOptions{}, "no-completion");
  const std::string file = dir_ + "/raw/" + EventsFileName(1, 0);
  // Rank 1's MPI_Isend (function 4 of the synthetic run) and the record that completes it.
  uint64_t isend = 0;
  EditRawRecords<trace::EventFileHeader>(file, [&](char* rec) {
    trace::EventRecord e;
    std::memcpy(&e, rec, sizeof e);
    if (!isend && e.type == trace::kCall && e.func == 4) isend = trace::CallRequest(e);
    return true;
  });
  ASSERT_NE(isend, 0u);
  ASSERT_TRUE(DropFirstEvent(file, [&](const trace::EventRecord& e) {
    return e.type == trace::kCompletion && e.request == isend;
  }));
  result_ = ConvertToOtf2(dir_);
  CheckReport r = CheckArchive(Archive());
  int isend_warnings = 0, irecv_warnings = 0;
  for (const auto& w : r.warnings) {
    isend_warnings +=
        w.find("rank 1: 1 MpiIsend but 0 MpiIsendComplete and 0 cancelled") != std::string::npos;
    irecv_warnings += w.find("MpiIrecvRequest") != std::string::npos;
  }
  EXPECT_EQ(isend_warnings, 1) << ::testing::PrintToString(r.warnings);
  EXPECT_EQ(irecv_warnings, 0);  // every receive completed
}

}  // namespace
}  // namespace invmw::otf2

namespace invmw::otf2 {
namespace {

// What `invmw trace check` and `invmw trace export` give (streamed, nothing kept per event)
// against what ReadTrace, which matches the messages in memory, finds in the same archive: the
// same event counts, messages and unmatched sends and receives (listed up to max_listed, the
// rest counted), one slice per region visit, one arrow per message between the right ranks, a
// counter value per finite metric value.
void ExpectStreamingAgreesWithReader(const std::string& dir) {
  const std::string archive = dir + "/traces.otf2";
  SCOPED_TRACE(archive);
  const Trace t = ReadTrace(archive);
  auto by_type = CountByType(t);
  auto by_rank = CountByRank(t);
  uint64_t events = 0, enters = 0, values = 0;
  for (const auto& l : t.locations) {
    events += l.events.size();
    for (const auto& e : l.events) enters += e.type == TraceEvent::kEnter;
    for (const auto& s : l.metrics)
      for (double v : s.values) values += std::isfinite(v);
  }
  for (const auto& m : t.metric_locations) {
    by_type["Metric"] += m.samples.size();
    by_rank[m.rank]["Metric"] += m.samples.size();
    events += m.samples.size();
    for (const auto& s : m.samples)
      for (double v : s.values) values += std::isfinite(v);
  }
  for (size_t max_listed : {size_t(10), size_t(1)}) {
    SCOPED_TRACE("max_listed " + std::to_string(max_listed));
    const CheckReport r = CheckArchive(archive, max_listed);
    EXPECT_EQ(r.by_type, by_type);
    EXPECT_EQ(r.by_rank, by_rank);
    EXPECT_EQ(r.events, events);
    EXPECT_EQ(r.messages, t.messages.size());
    for (const auto& [what, n] : {std::pair<std::string, size_t>{"send without a matching receive",
                                                                 t.unmatched_sends.size()},
                                  {"receive without a matching send", t.unmatched_recvs.size()}}) {
      size_t listed = 0;
      for (const auto& f : r.failures) listed += f.find(what) != std::string::npos;
      EXPECT_EQ(listed, std::min(n, max_listed)) << what;
    }
    EXPECT_EQ(r.ok, r.ok && t.unmatched_sends.empty() && t.unmatched_recvs.empty());
  }
  const std::string out = dir + "/streamed.json";
  const PerfettoStats st = ExportArchive(archive, out);
  EXPECT_EQ(st.slices, enters);
  EXPECT_EQ(st.flows, t.messages.size());
  EXPECT_EQ(st.counters, values);
  // The arrows: (sending rank, receiving rank, source, destination, tag, bytes, received bytes).
  using Arrow = std::tuple<int, int, int, int, uint32_t, uint64_t, uint64_t>;
  std::multiset<Arrow> got, want;
  for (const auto& m : t.messages)
    want.insert({t.locations[m.send_loc].rank, t.locations[m.recv_loc].rank, m.src, m.dst, m.tag,
                 m.bytes, m.recv_bytes});
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::map<uint64_t, int> recv_pid;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "f") recv_pid[e.at("id").get<uint64_t>()] = e.at("pid");
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") != "s") continue;
    const auto& a = e.at("args");
    ASSERT_EQ(recv_pid.count(e.at("id").get<uint64_t>()), 1u) << e.dump();
    got.insert({e.at("pid"), recv_pid[e.at("id").get<uint64_t>()], a.at("source"),
                a.at("destination"), a.at("tag"), a.at("bytes"), a.at("received_bytes")});
  }
  EXPECT_EQ(got, want);
}

TEST_F(ConvertedRun, StreamingCheckAndExportAgreeWithReader) {
  SyntheticOptions o;
  o.iterations = 3;
  o.samples = 5;
  Make(o, "stream-good");
  ExpectStreamingAgreesWithReader(dir_);
}

TEST_F(ConvertedRun, StreamingCheckAndExportAgreeWithReaderOnDefects) {
  SyntheticOptions unmatched;
  unmatched.unmatched_send = true;
  Make(unmatched, "stream-unmatched");
  ExpectStreamingAgreesWithReader(dir_);
  if (!HasFailure()) fs::remove_all(dir_);

  SyntheticOptions crash;
  crash.crash = true;
  crash.drift[2] = 0;
  Make(crash, "stream-crash");
  ExpectStreamingAgreesWithReader(dir_);
  if (!HasFailure()) fs::remove_all(dir_);

  dir_ = TempDir("stream-missingrank");
  expected_ = testing::WriteSyntheticRun(dir_);
  fs::remove(fs::path(dir_) / "raw" / DefsFileName(1));
  result_ = ConvertToOtf2(dir_);
  ExpectStreamingAgreesWithReader(dir_);
  if (!HasFailure()) fs::remove_all(dir_);

  dir_ = TempDir("stream-missingfile");
  expected_ = testing::WriteSyntheticRun(dir_);
  fs::remove(fs::path(dir_) / "raw" / EventsFileName(1, 0));
  result_ = ConvertToOtf2(dir_);
  ExpectStreamingAgreesWithReader(dir_);
}

}  // namespace
}  // namespace invmw::otf2

#include <otf2/otf2.h>

#include "otf2_writer/otf2_open.h"

namespace invmw::otf2 {
namespace {

// Two ranks whose archive holds one defect of each kind `trace check` fails on: a receive
// completing before its send began, sizes that differ, a send and a receive without partner,
// a Leave of the wrong region, a wrong declared event count. (OTF2's writer refuses a
// decreasing timestamp, so that defect is not among them.)
void WriteDefectiveArchive(const std::string& dir) {
  fs::create_directories(dir);
  auto check = [](OTF2_ErrorCode rc) { ASSERT_EQ(rc, OTF2_SUCCESS) << OTF2_Error_GetName(rc); };
  OTF2_Archive* a = OpenArchiveForWriting(dir, "traces", 1 << 20, 1 << 20);
  check(OTF2_Archive_OpenEvtFiles(a));
  enum : OTF2_RegionRef { kSend, kRecv, kFinalize };
  uint64_t counts[2] = {0, 0};
  for (uint64_t r = 0; r < 2; ++r) {
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(a, r);
    ASSERT_NE(w, nullptr);
    uint64_t& n = counts[r];
    auto call = [&](OTF2_RegionRef g, uint64_t t0, uint64_t t1, auto record) {
      check(OTF2_EvtWriter_Enter(w, nullptr, t0, g));
      record();
      check(OTF2_EvtWriter_Leave(w, nullptr, t1, g));
      n += 3;
    };
    auto send = [&](uint64_t t, uint32_t peer, uint32_t tag, uint64_t bytes) {
      call(kSend, t, t + 10,
           [&] { check(OTF2_EvtWriter_MpiSend(w, nullptr, t + 5, peer, 0, tag, bytes)); });
    };
    auto recv = [&](uint64_t t, uint32_t peer, uint32_t tag, uint64_t bytes) {
      call(kRecv, t, t + 10,
           [&] { check(OTF2_EvtWriter_MpiRecv(w, nullptr, t + 5, peer, 0, tag, bytes)); });
    };
    if (r == 0) {
      send(100, 1, 5, 64);   // received at 65, before it began: causality
      send(200, 1, 6, 100);  // received as 50 bytes
      send(300, 1, 8, 1);    // nobody receives it
      recv(400, 1, 7, 8);
      check(OTF2_EvtWriter_Enter(w, nullptr, 900, kFinalize));
      check(OTF2_EvtWriter_Leave(w, nullptr, 910, kFinalize));
      check(OTF2_EvtWriter_Enter(w, nullptr, 950, kSend));
      check(OTF2_EvtWriter_Leave(w, nullptr, 960, kRecv));  // not the region entered
      n += 4;
    } else {
      recv(50, 0, 5, 64);
      recv(230, 0, 6, 50);
      send(320, 0, 7, 8);
      recv(500, 0, 11, 4);  // nobody sends it
    }
    check(OTF2_Archive_CloseEvtWriter(a, w));
  }
  check(OTF2_Archive_CloseEvtFiles(a));
  check(OTF2_Archive_OpenDefFiles(a));
  for (uint64_t r = 0; r < 2; ++r)
    check(OTF2_Archive_CloseDefWriter(a, OTF2_Archive_GetDefWriter(a, r)));
  check(OTF2_Archive_CloseDefFiles(a));
  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(a);
  check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000, 0, 1000, OTF2_UNDEFINED_TIMESTAMP));
  OTF2_StringRef next = 0;
  auto str = [&](const std::string& s) {
    check(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()));
    return next++;
  };
  const OTF2_StringRef empty = str("");
  const char* names[] = {"MPI_Send", "MPI_Recv", "MPI_Finalize"};
  for (OTF2_RegionRef i = 0; i < 3; ++i)
    check(OTF2_GlobalDefWriter_WriteRegion(g, i, str(names[i]), empty, empty,
                                           OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI,
                                           OTF2_REGION_FLAG_NONE, empty, 0, 0));
  check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str("node"), str("machine"),
                                                 OTF2_UNDEFINED_SYSTEM_TREE_NODE));
  const uint64_t members[2] = {0, 1};
  for (uint64_t r = 0; r < 2; ++r) {
    check(OTF2_GlobalDefWriter_WriteLocationGroup(g, r, str("rank " + std::to_string(r)),
                                                  OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                  OTF2_UNDEFINED_LOCATION_GROUP));
    // Rank 1 declares an event more than it has.
    check(OTF2_GlobalDefWriter_WriteLocation(g, r, str("rank " + std::to_string(r) + " main"),
                                             OTF2_LOCATION_TYPE_CPU_THREAD, counts[r] + r, r));
  }
  check(OTF2_GlobalDefWriter_WriteGroup(g, 0, str("locations"), OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, 2, members));
  const OTF2_StringRef world = str("MPI_COMM_WORLD");
  check(OTF2_GlobalDefWriter_WriteGroup(g, 1, world, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, 2, members));
  check(OTF2_GlobalDefWriter_WriteComm(g, 0, world, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE));
  check(OTF2_Archive_Close(a));
}

TEST(StreamingCheck, FindsEachDefect) {
  const std::string dir = TempDir("stream-defects");
  fs::remove_all(dir);
  WriteDefectiveArchive(dir);
  if (HasFatalFailure()) return;
  ExpectStreamingAgreesWithReader(dir);
  Trace d = ReadTraceDefinitions(dir + "/traces.otf2");
  const CheckReport r = CheckTraceStreaming(&d);
  EXPECT_FALSE(r.ok);
  for (const char* what :
       {"before its send", "received 50 bytes", "send without a matching receive",
        "receive without a matching send", "Leave does not match the innermost open region",
        "definitions declare 13 events"}) {
    bool found = false;
    for (const auto& f : r.failures) found |= f.find(what) != std::string::npos;
    EXPECT_TRUE(found) << "no failure \"" << what << "\"";
  }
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace invmw::otf2

namespace invmw::otf2 {
namespace {

std::map<std::string, std::string> FilesUnder(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      out[e.path().string()].assign(std::istreambuf_iterator<char>(in), {});
    }
  return out;
}

// Call sites (issue 22): kCall records carry their call-site slot in request's high bits
// (no record of their own); the converter turns (thread, slot) into calling contexts named by
// object+offset through the rank's call-site file, and NameTraceContexts renames them in
// traces.def alone.
TEST_F(ConvertedRun, CallSiteSlotsBecomeCallingContextsAndAreRenamedInTheDefsOnly) {
  trace::EventRecord big{};
  big.type = trace::kCall;
  big.request = uint64_t(1) << 40;
  trace::PackCallSite(&big, 3);
  EXPECT_EQ(big.request, uint64_t(1) << 40) << "a request id that does not fit is kept";
  EXPECT_EQ(trace::CallSiteSlot1(big), 0u);

  Make(SyntheticOptions{}, "callsites");
  const Trace plain = ReadTrace(Archive());
  const std::string file = dir_ + "/raw/events-000001-000.bin";
  std::vector<char> bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  trace::EventFileHeader h;
  ASSERT_GE(bytes.size(), sizeof h);
  std::memcpy(&h, bytes.data(), sizeof h);
  const size_t n = (bytes.size() - h.header_size) / sizeof(trace::EventRecord);
  auto* recs = reinterpret_cast<trace::EventRecord*>(bytes.data() + h.header_size);
  uint64_t calls = 0;
  for (size_t i = 0; i < n; ++i)
    if (recs[i].type == trace::kCall) trace::PackCallSite(&recs[i], ++calls % 2 ? 6 : 10);
  ASSERT_GT(calls, 4u);
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    ASSERT_TRUE(out.good());
  }
  fs::create_directories(dir_ + "/callsites");
  {
    std::ofstream out(dir_ + "/callsites/rank-000001.txt");
    out << "invmw-callsites 2\nrank 1\ndepth 1\nticks_per_second 1000000000.0\nmaps init\n"
           "m 400000 500000 0 400000 - /usr/bin/app\nend-maps\nthread 0\n"
           "site MPI_Send 1 1 1 1 0 401000 @5\nsite MPI_Recv 1 1 1 0 1 402000 @9\nend 0\n";
  }
  const ConvertResult r = ConvertToOtf2(dir_);
  EXPECT_TRUE(r.problems.empty()) << r.problems.front();
  Trace t = ReadTrace(Archive());
  ASSERT_EQ(t.callsites.size(), 2u);
  EXPECT_EQ(t.callsites[0].function, "app+0x1000");
  EXPECT_EQ(t.callsites[1].function, "app+0x2000");
  EXPECT_EQ(t.callsites[0].line, 0u);
  // The same events and messages as without slots (request ids intact), plus the contexts.
  ASSERT_EQ(t.locations.size(), plain.locations.size());
  uint64_t with_site[2] = {0, 0};
  for (size_t l = 0; l < t.locations.size(); ++l) {
    ASSERT_EQ(t.locations[l].events.size(), plain.locations[l].events.size());
    for (size_t i = 0; i < t.locations[l].events.size(); ++i) {
      const TraceEvent& e = t.locations[l].events[i];
      EXPECT_EQ(e.type, plain.locations[l].events[i].type);
      EXPECT_EQ(e.request, plain.locations[l].events[i].request);
      if (e.type == TraceEvent::kEnter && e.callsite != UINT32_MAX) {
        EXPECT_EQ(t.locations[l].rank, 1);
        ++with_site[e.callsite];
      }
    }
  }
  EXPECT_EQ(with_site[0] + with_site[1], calls);
  EXPECT_EQ(with_site[0], (calls + 1) / 2);

  // Renaming: traces.def only.
  const auto events_before = FilesUnder(dir_ + "/traces");
  std::string anchor_before;
  {
    std::ifstream in(Archive(), std::ios::binary);
    anchor_before.assign(std::istreambuf_iterator<char>(in), {});
  }
  const NameResult named =
      NameTraceContexts(dir_, "traces", {{"app+0x1000", {"solve", "src/solver.c", 212}}});
  ASSERT_TRUE(named.ok) << named.error;
  EXPECT_EQ(named.contexts, 2u);
  EXPECT_EQ(named.renamed, 1u);
  EXPECT_EQ(FilesUnder(dir_ + "/traces"), events_before);
  {
    std::ifstream in(Archive(), std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), anchor_before);
  }
  t = ReadTrace(Archive());
  ASSERT_EQ(t.callsites.size(), 2u);
  EXPECT_EQ(t.callsites[0].function, "solve");
  EXPECT_EQ(t.callsites[0].file, "src/solver.c");
  EXPECT_EQ(t.callsites[0].line, 212u);
  EXPECT_EQ(t.callsites[1].function, "app+0x2000");
  // Again, with a better name: found by the label kept in the canonical name.
  ASSERT_TRUE(NameTraceContexts(dir_, "traces", {{"app+0x1000", {"solve2", "solver.c", 213}}}).ok);
  t = ReadTrace(Archive());
  EXPECT_EQ(t.callsites[0].function, "solve2");
  EXPECT_EQ(t.callsites[0].line, 213u);
  std::string out;
  ASSERT_EQ(RunArgv({INVMW_OTF2_PRINT, "-G", Archive()}, &out), 0) << out;
  EXPECT_NE(out.find("solver.c"), std::string::npos) << out;
}

}  // namespace
}  // namespace invmw::otf2
