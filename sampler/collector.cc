#include "sampler/collector.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace invmw::sampler {
namespace {

using nlohmann::json;
using stream::DatagramHeader;

// Two-sided 95% quantile of Student's t with `dof` degrees of freedom.
double T95(uint64_t dof) {
  static const double table[] = {0,     12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0) return INFINITY;
  if (dof <= 30) return table[dof];
  return dof <= 60 ? 2.00 : dof <= 120 ? 1.98 : 1.96;
}

// The rate of an accumulated metric over the intervals between received samples: the ratio
// estimator sum(dv) / sum(dt), so unequal intervals (a lost sample doubles one) weigh by their
// length, with its usual standard error from the residuals dv_i - R * dt_i.
MetricStat EstimateRate(const std::string& name, const std::vector<double>& dv,
                        const std::vector<double>& dt) {
  MetricStat m;
  m.name = name;
  m.accumulated = true;
  m.n = dv.size();
  if (dv.empty()) return m;
  double sv = 0, st = 0;
  for (size_t i = 0; i < dv.size(); ++i) sv += dv[i], st += dt[i];
  m.mean = st > 0 ? sv / st : 0;
  double half = 0;
  if (dv.size() > 1 && st > 0) {
    double ss = 0;
    for (size_t i = 0; i < dv.size(); ++i)
      ss += (dv[i] - m.mean * dt[i]) * (dv[i] - m.mean * dt[i]);
    const double n = double(dv.size()), mean_dt = st / n;
    half = T95(dv.size() - 1) * std::sqrt(ss / (n - 1) / n) / mean_dt;
  }
  m.ci_low = m.mean - half;
  m.ci_high = m.mean + half;
  return m;
}

MetricStat Estimate(const std::string& name, bool acc, const std::vector<double>& xs) {
  MetricStat m;
  m.name = name;
  m.accumulated = acc;
  m.n = xs.size();
  if (xs.empty()) return m;
  double s = 0;
  for (double x : xs) s += x;
  m.mean = s / double(xs.size());
  double v = 0;
  for (double x : xs) v += (x - m.mean) * (x - m.mean);
  const double half =
      xs.size() > 1 ? T95(xs.size() - 1) * std::sqrt(v / double(xs.size() - 1) / double(xs.size()))
                    : 0;
  m.ci_low = m.mean - half;
  m.ci_high = m.mean + half;
  return m;
}

std::string SafeName(const std::string& host) {
  std::string s;
  for (char c : host) s += (std::isalnum((unsigned char)c) || c == '-' || c == '.') ? c : '_';
  return s.empty() ? "unknown" : s;
}

}  // namespace

Collector::Verdict Collector::Feed(const void* data, size_t n) {
  const unsigned char* d = static_cast<const unsigned char*>(data);
  uint32_t magic = 0;
  if (n >= 4) std::memcpy(&magic, d, 4);
  if (n < 5 || magic != stream::kMagic || d[4] != stream::kVersion) {
    ++foreign_;
    return Verdict::kForeign;
  }
  auto malformed = [&] {
    ++malformed_;
    return Verdict::kMalformed;
  };
  if (n < sizeof(DatagramHeader) || n > stream::kMaxDatagram) return malformed();
  DatagramHeader h;
  std::memcpy(&h, d, sizeof h);
  if (h.header_size != sizeof h || h.checksum != stream::Checksum(d, n)) return malformed();
  const size_t payload = n - sizeof h;
  const unsigned char* p = d + sizeof h;
  // Validate the kind's shape before anything is stored.
  stream::InfoPayload info{};
  std::vector<std::pair<std::string, bool>> names;
  switch (h.kind) {
    case stream::kSample:
      if (h.nparts == 0 || h.part >= h.nparts || h.count > stream::kMaxValues ||
          payload != size_t(h.count) * sizeof(double))
        return malformed();
      break;
    case stream::kInfo:
      if (payload != sizeof info) return malformed();
      std::memcpy(&info, p, sizeof info);
      if (!(info.ticks_per_second > 0) || !std::isfinite(info.ticks_per_second) ||
          info.num_metrics > 65535 || info.host[sizeof info.host - 1] != '\0')
        return malformed();
      break;
    case stream::kNames: {
      size_t off = 0;
      while (off < payload) {
        if (off + 2 > payload) return malformed();
        const size_t len = p[off + 1];
        if (off + 2 + len > payload) return malformed();
        names.emplace_back(std::string(reinterpret_cast<const char*>(p + off + 2), len),
                           (p[off] & 1) != 0);
        off += 2 + len;
      }
      if (names.size() != h.count) return malformed();
      break;
    }
    default:
      return malformed();
  }
  Stream& s = streams_[Key{h.node_id, h.stream_id, h.rank}];
  if (s.received == 0) {
    s.node_id = h.node_id;
    s.stream_id = h.stream_id;
    s.rank = h.rank;
  }
  const uint32_t limit = s.has_info ? s.info.num_metrics : 65535;
  if (h.kind == stream::kSample && size_t(h.first) + h.count > limit) return malformed();
  if (h.kind == stream::kNames && size_t(h.first) + h.count > limit) return malformed();
  if (!s.seqs.insert(h.seq).second) {
    ++duplicate_;
    return Verdict::kDuplicate;
  }
  ++s.received;
  s.min_seq = std::min(s.min_seq, h.seq);
  s.max_seq = std::max(s.max_seq, h.seq);
  ++accepted_;
  if (h.kind == stream::kInfo) {
    s.info = info;
    s.has_info = true;
  } else if (h.kind == stream::kNames) {
    const size_t end = size_t(h.first) + h.count;
    if (s.names.size() < end) {
      s.names.resize(end);
      s.accumulated.resize(end, true);
      s.named.resize(end, false);
    }
    for (size_t i = 0; i < names.size(); ++i) {
      s.names[h.first + i] = names[i].first;
      s.accumulated[h.first + i] = names[i].second;
      s.named[h.first + i] = true;
    }
  } else {
    Partial& ps = s.samples[h.sample];
    ps.ticks = h.ticks;
    const size_t end = size_t(h.first) + h.count;
    if (ps.values.size() < end) {
      ps.values.resize(end, 0.0);
      ps.have.resize(end, false);
    }
    std::memcpy(&ps.values[h.first], p, h.count * sizeof(double));
    for (size_t i = h.first; i < end; ++i) ps.have[i] = true;
  }
  return Verdict::kAccepted;
}

CollectorReport Collector::Analyze() const {
  CollectorReport r;
  r.accepted = accepted_;
  r.foreign = foreign_;
  r.malformed = malformed_;
  r.duplicate = duplicate_;
  for (const auto& [key, s] : streams_) {
    StreamReport sr;
    sr.node_id = s.node_id;
    sr.stream_id = s.stream_id;
    sr.rank = s.rank;
    sr.has_info = s.has_info;
    sr.host = s.has_info ? std::string(s.info.host) : "node-" + std::to_string(s.node_id);
    sr.received = s.received;
    sr.expected = s.received ? s.max_seq - s.min_seq + 1 : 0;
    sr.lost = sr.expected - sr.received;
    sr.loss_rate = sr.expected ? double(sr.lost) / double(sr.expected) : 0;
    size_t m = s.has_info ? s.info.num_metrics : 0;
    for (const auto& [num, ps] : s.samples) m = std::max(m, ps.values.size());
    sr.names.resize(m);
    sr.accumulated.assign(m, true);
    sr.has_names = s.names.size() >= m;
    for (size_t i = 0; i < m; ++i) {
      const bool named = i < s.named.size() && s.named[i];
      sr.names[i] = named ? s.names[i] : "metric" + std::to_string(i);
      if (named) sr.accumulated[i] = s.accumulated[i];
      sr.has_names = sr.has_names && named;
    }
    if (s.samples.empty() || m == 0) {
      r.streams.push_back(std::move(sr));
      continue;
    }
    // The series from the first to the last sample received; gaps get their stamps and values
    // by linear interpolation (in sample number for stamps, in time for values).
    const uint64_t first = s.samples.begin()->first, last = s.samples.rbegin()->first;
    const size_t len = size_t(last - first + 1);
    std::vector<SeriesPoint> pts(len);
    std::vector<std::vector<bool>> have(len, std::vector<bool>(m, false));
    std::vector<bool> known(len, false);
    for (const auto& [num, ps] : s.samples) {
      const size_t i = size_t(num - first);
      pts[i].ticks = ps.ticks;
      pts[i].values.assign(m, 0.0);
      for (size_t k = 0; k < ps.values.size(); ++k)
        if (ps.have[k]) pts[i].values[k] = ps.values[k], have[i][k] = true;
      known[i] = true;
    }
    for (size_t i = 0, prev = 0; i < len; ++i) {
      pts[i].sample = first + i;
      if (known[i]) {
        prev = i;
        continue;
      }
      size_t next = i + 1;
      while (!known[next]) ++next;  // the last point is always known
      const double f = double(i - prev) / double(next - prev);
      pts[i].ticks = pts[prev].ticks + uint64_t(f * double(pts[next].ticks - pts[prev].ticks));
      pts[i].values.assign(m, 0.0);
    }
    for (size_t k = 0; k < m; ++k) {
      long prev = -1;
      for (size_t i = 0; i < len; ++i) {
        if (have[i][k]) {
          prev = long(i);
          continue;
        }
        size_t next = i + 1;
        while (next < len && !have[next][k]) ++next;
        double v;
        if (prev < 0 && next >= len) {
          v = 0;
        } else if (prev < 0) {
          v = pts[next].values[k];
        } else if (next >= len) {
          v = pts[prev].values[k];
        } else {
          const double t0 = double(pts[prev].ticks), t1 = double(pts[next].ticks);
          const double f = t1 > t0 ? (double(pts[i].ticks) - t0) / (t1 - t0) : 0.5;
          v = pts[prev].values[k] + f * (pts[next].values[k] - pts[prev].values[k]);
        }
        pts[i].values[k] = v;
        pts[i].interpolated = true;
      }
    }
    const double tps = s.has_info ? s.info.ticks_per_second : 1e9;
    for (auto& pt : pts) {
      if (pt.interpolated) ++sr.samples_interpolated;
      if (s.has_info)
        pt.time = double(s.info.anchor_realtime_ns) * 1e-9 +
                  double(int64_t(pt.ticks - s.info.anchor_ticks)) / tps;
      else
        pt.time = double(pt.ticks) / tps;
    }
    sr.samples_received = s.samples.size();
    // Estimates from what was received, never from interpolated values.
    for (size_t k = 0; k < m; ++k) {
      std::vector<double> xs, dts;
      long prev = -1;
      for (size_t i = 0; i < len; ++i) {
        if (!have[i][k]) continue;
        if (!sr.accumulated[k]) {
          xs.push_back(pts[i].values[k]);
        } else if (prev >= 0) {
          const double dt = double(int64_t(pts[i].ticks - pts[prev].ticks)) / tps;
          if (dt > 0) xs.push_back(pts[i].values[k] - pts[prev].values[k]), dts.push_back(dt);
        }
        prev = long(i);
      }
      sr.stats.push_back(sr.accumulated[k] ? EstimateRate(sr.names[k], xs, dts)
                                           : Estimate(sr.names[k], false, xs));
    }
    sr.series = std::move(pts);
    r.streams.push_back(std::move(sr));
  }
  // Nodes: loss over all their streams; metric estimates summed over the streams (independent,
  // so variances of the means add).
  std::map<uint32_t, NodeReport> nodes;
  std::map<uint32_t, std::map<std::string, std::pair<MetricStat, double>>> sums;
  for (const auto& sr : r.streams) {
    NodeReport& n = nodes[sr.node_id];
    n.node_id = sr.node_id;
    if (n.host.empty() || sr.has_info) n.host = sr.host;
    n.ranks.push_back(sr.rank);
    n.expected += sr.expected;
    n.lost += sr.lost;
    for (const auto& st : sr.stats) {
      if (st.n == 0) continue;
      auto& [acc, var] = sums[sr.node_id][st.name];
      const double half = (st.ci_high - st.ci_low) / 2 / 1.96;
      acc.name = st.name;
      acc.accumulated = st.accumulated;
      acc.n += st.n;
      acc.mean += st.mean;
      var += half * half;
    }
  }
  for (auto& [id, n] : nodes) {
    n.loss_rate = n.expected ? double(n.lost) / double(n.expected) : 0;
    std::sort(n.ranks.begin(), n.ranks.end());
    for (auto& [name, sv] : sums[id]) {
      MetricStat st = sv.first;
      const double half = 1.96 * std::sqrt(sv.second);
      st.ci_low = st.mean - half;
      st.ci_high = st.mean + half;
      n.stats.push_back(st);
    }
    r.nodes.push_back(n);
  }
  return r;
}

bool Collector::WriteLogs(const std::string& dir, const CollectorReport& r, std::string* error) {
  mkdir(dir.c_str(), 0755);
  struct Line {
    double time;
    const std::string* host;
    std::string text;
  };
  std::vector<Line> merged;
  for (const auto& sr : r.streams)
    for (const auto& pt : sr.series) {
      json j = {{"t", pt.time},
                {"node", sr.host},
                {"rank", sr.rank},
                {"stream", sr.stream_id},
                {"sample", pt.sample},
                {"ticks", pt.ticks},
                {"interpolated", pt.interpolated},
                {"values", pt.values}};
      // Host and metric names come from the wire and need not be UTF-8: replaced, not thrown.
      merged.push_back({pt.time, &sr.host, j.dump(-1, ' ', false, json::error_handler_t::replace)});
    }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const Line& a, const Line& b) { return a.time < b.time; });
  std::ofstream all(dir + "/merged.log");
  std::map<std::string, std::ofstream> nodes;
  for (const auto& n : r.nodes) nodes[n.host].open(dir + "/node-" + SafeName(n.host) + ".log");
  for (const auto& l : merged) {
    all << l.text << "\n";
    auto it = nodes.find(*l.host);
    if (it != nodes.end()) it->second << l.text << "\n";
  }
  json streams = json::array(), nodej = json::array();
  auto stats_json = [](const std::vector<MetricStat>& v) {
    json a = json::array();
    for (const auto& st : v)
      a.push_back({{"name", st.name},
                   {"accumulated", st.accumulated},
                   {"n", st.n},
                   {"mean", st.mean},
                   {"ci_low", st.ci_low},
                   {"ci_high", st.ci_high}});
    return a;
  };
  for (const auto& sr : r.streams)
    streams.push_back({{"host", sr.host},
                       {"node_id", sr.node_id},
                       {"rank", sr.rank},
                       {"stream", sr.stream_id},
                       {"has_info", sr.has_info},
                       {"expected_datagrams", sr.expected},
                       {"received_datagrams", sr.received},
                       {"lost_datagrams", sr.lost},
                       {"loss_rate", sr.loss_rate},
                       {"samples_received", sr.samples_received},
                       {"samples_interpolated", sr.samples_interpolated},
                       {"first_sample", sr.series.empty() ? 0 : sr.series.front().sample},
                       {"last_sample", sr.series.empty() ? 0 : sr.series.back().sample},
                       {"metrics", sr.names},
                       {"stats", stats_json(sr.stats)}});
  for (const auto& n : r.nodes)
    nodej.push_back({{"host", n.host},
                     {"node_id", n.node_id},
                     {"ranks", n.ranks},
                     {"expected_datagrams", n.expected},
                     {"lost_datagrams", n.lost},
                     {"loss_rate", n.loss_rate},
                     {"stats", stats_json(n.stats)}});
  json summary = {{"datagrams",
                   {{"accepted", r.accepted},
                    {"foreign", r.foreign},
                    {"malformed", r.malformed},
                    {"duplicate", r.duplicate}}},
                  {"nodes", nodej},
                  {"streams", streams}};
  std::ofstream(dir + "/summary.json")
      << summary.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  if (!all) {
    if (error) *error = dir + "/merged.log: cannot write";
    return false;
  }
  return true;
}

std::string Collector::RenderSummary(const CollectorReport& r) {
  std::ostringstream os;
  char b[512];
  std::snprintf(b, sizeof b,
                "datagrams: %llu accepted, %llu foreign, %llu malformed, %llu duplicate\n",
                (unsigned long long)r.accepted, (unsigned long long)r.foreign,
                (unsigned long long)r.malformed, (unsigned long long)r.duplicate);
  os << b;
  for (const auto& n : r.nodes) {
    std::snprintf(b, sizeof b,
                  "node %s: %zu stream(s), %llu datagrams expected, %llu lost (%.2f%%)\n",
                  n.host.c_str(), n.ranks.size(), (unsigned long long)n.expected,
                  (unsigned long long)n.lost, 100.0 * n.loss_rate);
    os << b;
    int shown = 0;
    for (const auto& st : n.stats) {
      if (st.mean == 0 && st.ci_high == 0) continue;
      if (++shown > 16) {
        os << "  ... (all metrics in summary.json)\n";
        break;
      }
      std::snprintf(b, sizeof b, "  %-36s %s %12.6g  95%% CI [%.6g, %.6g]  n=%llu\n",
                    st.name.c_str(), st.accumulated ? "rate/s" : "mean  ", st.mean, st.ci_low,
                    st.ci_high, (unsigned long long)st.n);
      os << b;
    }
  }
  return os.str();
}

std::string Collector::LiveLine() const {
  uint64_t expected = 0, received = 0;
  std::set<uint32_t> nodes;
  for (const auto& [key, s] : streams_) {
    nodes.insert(s.node_id);
    if (s.received) expected += s.max_seq - s.min_seq + 1, received += s.received;
  }
  char b[256];
  std::snprintf(b, sizeof b,
                "%zu node(s), %zu stream(s), %llu datagrams, loss %.2f%%, rejected %llu",
                nodes.size(), streams_.size(), (unsigned long long)received,
                expected ? 100.0 * double(expected - received) / double(expected) : 0.0,
                (unsigned long long)(foreign_ + malformed_ + duplicate_));
  return b;
}

}  // namespace invmw::sampler
