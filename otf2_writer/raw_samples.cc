#include "otf2_writer/raw_samples.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/raw_input.h"
#include "common/sample_format.h"
#include "otf2_writer/json_int.h"

namespace invmw::otf2 {

int RawSamples::Find(const std::string& metric) const {
  for (size_t i = 0; i < metrics.size(); ++i)
    if (metrics[i].name == metric) return int(i);
  return -1;
}

bool LoadRawSamples(const std::string& run_dir, int32_t rank, RawSamples* out,
                    std::vector<std::string>* problems) {
  const std::string defs_name = "raw/" + samples::MetricsFileName(rank);
  const std::string data_name = "raw/" + samples::SamplesFileName(rank);
  auto problem = [&](const std::string& file, const std::string& what) {
    if (problems) problems->push_back(file + ": " + what);
  };
  struct stat st;
  if (lstat((run_dir + "/" + defs_name).c_str(), &st) != 0) return false;  // sampling was off
  std::string text, err;
  // Regular files only: a FIFO or a device must neither block nor be read without end.
  if (!rawio::ReadRegularFile(run_dir + "/" + defs_name, uint64_t(1) << 30, &text, &err)) {
    problem(defs_name, "cannot be read: " + err + "; samples ignored");
    return false;
  }
  std::istringstream defs(text);
  RawSamples r;
  r.rank = rank;
  std::string line;
  int lineno = 0;
  while (std::getline(defs, line)) {
    ++lineno;
    if (line.empty()) continue;
    try {
      const auto j = nlohmann::json::parse(line);
      const std::string type = j.at("type");
      if (type == "sampler") {
        r.host = j.value("host", "");
        r.node_leader = j.value("node_leader", false);
        const double tps = j.at("ticks_per_second");
        if (!std::isfinite(tps) || tps < 1)
          throw std::runtime_error("\"ticks_per_second\" " + std::to_string(tps) +
                                   ": expected a finite tick rate of at least 1 per second");
        r.ticks_per_second = tps;
        r.interval_s = j.value("interval_s", 0.0);
      } else if (type == "metric") {
        const size_t index = As<size_t>(j.at("index"));
        if (index != r.metrics.size()) {
          problem(defs_name, "line " + std::to_string(lineno) + ": metric index " +
                                 std::to_string(index) + ", expected " +
                                 std::to_string(r.metrics.size()));
          break;
        }
        RawMetric m;
        m.name = j.at("name");
        m.unit = j.value("unit", "");
        m.source = j.value("source", "");
        m.description = j.value("description", "");
        m.accumulated = j.value("mode", "accumulated") == "accumulated";
        r.metrics.push_back(m);
      } else if (type == "end") {
        r.has_end = true;
      }
    } catch (const std::exception& e) {
      problem(defs_name, "line " + std::to_string(lineno) + " skipped: " + e.what());
    }
  }
  std::string bytes;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const uint64_t memory = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 1ull << 34;
  if (!rawio::ReadRegularFile(run_dir + "/" + data_name, memory, &bytes, &err)) {
    problem(data_name, "cannot be read: " + err);
    *out = std::move(r);
    return true;
  }
  samples::SampleFileHeader h{};
  if (bytes.size() < sizeof h) {
    problem(data_name, "missing or shorter than its header");
    *out = std::move(r);
    return true;
  }
  std::memcpy(&h, bytes.data(), sizeof h);
  const size_t expect_rec = sizeof(samples::SampleRecordHead) + 8 * r.metrics.size();
  if (h.magic != samples::kSampleMagic || h.version != samples::kSampleVersion ||
      h.header_size != sizeof h || h.num_metrics != r.metrics.size() ||
      h.record_size != expect_rec) {
    problem(data_name, "header does not match (magic/version/size, or " +
                           std::to_string(h.num_metrics) + " metrics where " + defs_name +
                           " declares " + std::to_string(r.metrics.size()) + "); samples ignored");
    *out = std::move(r);
    return true;
  }
  const size_t n = (bytes.size() - sizeof h) / h.record_size;
  if ((bytes.size() - sizeof h) % h.record_size)
    problem(data_name, "last record cut short (dropped)");
  r.ticks.resize(n);
  r.sample.resize(n);
  r.values.resize(n * r.metrics.size());
  for (size_t i = 0; i < n; ++i) {
    const char* rec = bytes.data() + sizeof h + i * h.record_size;
    samples::SampleRecordHead head;
    std::memcpy(&head, rec, sizeof head);
    r.ticks[i] = head.ticks;
    r.sample[i] = head.sample;
    std::memcpy(&r.values[i * r.metrics.size()], rec + sizeof head, 8 * r.metrics.size());
  }
  *out = std::move(r);
  return true;
}

}  // namespace invmw::otf2
