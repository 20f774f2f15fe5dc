#include "sampler/collector.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
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

bool ValidWireName(const char* s, size_t n, bool allow_empty) {
  if (n == 0) return allow_empty;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(s);
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4, cp = c & 0x07;
    } else {
      return false;  // a continuation byte first, an overlong lead byte, or past U+10FFFF
    }
    if (len > n - i) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
      return false;
    i += len;
  }
  return true;
}

Collector::Verdict Collector::Feed(const void* data, size_t n) noexcept {
  try {
    return FeedChecked(static_cast<const unsigned char*>(data), n);
  } catch (...) {
    // Out of memory while storing: this datagram is lost, what was stored before is kept.
    ++errors_;
    return Verdict::kError;
  }
}

Collector::Verdict Collector::FeedChecked(const unsigned char* d, size_t n) {
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
          info.num_metrics > kMaxMetrics || info.host[sizeof info.host - 1] != '\0' ||
          !ValidWireName(info.host, std::strlen(info.host), true))
        return malformed();
      break;
    case stream::kNames: {
      size_t off = 0;
      while (off < payload) {
        if (off + 2 > payload) return malformed();
        const size_t len = p[off + 1];
        if (off + 2 + len > payload) return malformed();
        const char* name = reinterpret_cast<const char*>(p + off + 2);
        if (!ValidWireName(name, len)) return malformed();
        names.emplace_back(std::string(name, len), (p[off] & 1) != 0);
        off += 2 + len;
      }
      if (names.size() != h.count) return malformed();
      break;
    }
    default:
      return malformed();
  }
  const Key key{h.node_id, h.stream_id, h.rank};
  auto it = streams_.find(key);
  const Stream* known = it == streams_.end() ? nullptr : &it->second;
  size_t limit = kMaxMetrics;
  if (known && known->has_info) limit = std::min<size_t>(limit, known->info.num_metrics);
  if ((h.kind == stream::kSample || h.kind == stream::kNames) && size_t(h.first) + h.count > limit)
    return malformed();
  if (known && known->seqs.count(h.seq)) {
    ++duplicate_;
    return Verdict::kDuplicate;
  }
  if (!known) {
    if (streams_.size() >= kMaxStreams) {
      ++refused_;
      return Verdict::kRefused;
    }
    it = streams_.emplace(key, Stream{}).first;
    it->second.node_id = h.node_id;
    it->second.stream_id = h.stream_id;
    it->second.rank = h.rank;
  }
  Stream& s = it->second;
  s.seqs.insert(h.seq);
  if (s.received == 0) {
    s.min_seq = s.max_seq = h.seq;
    s.epochs = 1;
  } else if ((h.seq < s.min_seq && s.min_seq - h.seq > kMaxSeqJump) ||
             (h.seq > s.max_seq && h.seq - s.max_seq > kMaxSeqJump)) {
    // Not a plausible loss (a million datagrams) but a restart or a forged number: the range
    // so far is closed, and loss is never counted across the jump.
    s.past_expected += s.max_seq - s.min_seq + 1;
    s.past_received += s.received;
    s.received = 0;
    s.min_seq = s.max_seq = h.seq;
    ++s.epochs;
    ++seq_jumps_;
  }
  ++s.received;
  s.min_seq = std::min(s.min_seq, h.seq);
  s.max_seq = std::max(s.max_seq, h.seq);
  ++accepted_;
  if (h.kind == stream::kInfo) {
    s.info = info;
    s.has_info = true;
  } else if (h.kind == stream::kNames) {
    for (size_t i = 0; i < names.size(); ++i) s.names[uint32_t(h.first + i)] = names[i];
    if (h.count) s.width = std::max<uint32_t>(s.width, uint32_t(h.first) + h.count);
  } else {
    Partial& ps = s.samples[h.sample];
    ps.ticks = h.ticks;
    Chunk c;
    c.first = h.first;
    c.values.resize(h.count);
    if (h.count) std::memcpy(c.values.data(), p, h.count * sizeof(double));
    ps.chunks.push_back(std::move(c));
    s.values_received += h.count;
    if (h.count) s.width = std::max<uint32_t>(s.width, uint32_t(h.first) + h.count);
  }
  return Verdict::kAccepted;
}

CollectorReport Collector::Analyze() const {
  CollectorReport r;
  r.accepted = accepted_;
  r.foreign = foreign_;
  r.malformed = malformed_;
  r.duplicate = duplicate_;
  r.refused = refused_;
  r.errors = errors_;
  r.seq_jumps = seq_jumps_;
  for (const auto& [key, s] : streams_) {
    StreamReport sr;
    sr.node_id = s.node_id;
    sr.stream_id = s.stream_id;
    sr.rank = s.rank;
    sr.has_info = s.has_info;
    sr.host = s.has_info ? std::string(s.info.host) : "node-" + std::to_string(s.node_id);
    sr.received = s.Received();
    sr.expected = s.Expected();
    sr.lost = sr.expected - sr.received;
    sr.loss_rate = sr.expected ? double(sr.lost) / double(sr.expected) : 0;
    sr.seq_epochs = s.epochs;
    // The metrics: as many as were received (values or names), never more than kMaxMetrics.
    const size_t m = s.width;
    sr.names.resize(m);
    sr.accumulated.assign(m, true);
    sr.has_names = true;
    for (size_t i = 0; i < m; ++i) {
      auto nit = s.names.find(uint32_t(i));
      const bool named = nit != s.names.end();
      sr.names[i] = named ? nit->second.first : "metric" + std::to_string(i);
      if (named) sr.accumulated[i] = nit->second.second;
      sr.has_names = sr.has_names && named;
    }
    sr.samples_received = s.samples.size();
    if (!s.samples.empty()) {
      sr.first_sample = s.samples.begin()->first;
      sr.last_sample = s.samples.rbegin()->first;
    }
    if (s.samples.empty() || m == 0) {
      r.streams.push_back(std::move(sr));
      continue;
    }
    // The points of the series: every sample received, and the samples lost in a gap of at
    // most kMaxInterpolatedGap; a longer gap splits the series into segments.
    uint64_t interpolated = 0;
    for (auto a = s.samples.begin(), b = std::next(a); b != s.samples.end(); ++a, ++b) {
      const uint64_t gap = b->first - a->first - 1;
      if (gap > kMaxInterpolatedGap)
        ++sr.gaps_not_interpolated;
      else
        interpolated += gap;
    }
    // What the series costs, in cells of 8 bytes, against what was received.
    const uint64_t point = m + kSeriesPointCells;
    const uint64_t budget =
        kSeriesBudgetFactor * (s.values_received + kSeriesPointCells * s.samples.size()) +
        kSeriesCellsSlack;
    bool fill = true;
    if ((s.samples.size() + interpolated) * point > budget) {
      fill = false;
      if (s.samples.size() * point > budget) {
        sr.series_omitted = true;
        r.streams.push_back(std::move(sr));
        continue;
      }
    }
    std::vector<SeriesPoint> pts;
    std::vector<size_t> segment;  // per point
    std::vector<std::vector<bool>> have;
    std::vector<bool> known;
    pts.reserve(s.samples.size() + (fill ? interpolated : 0));
    size_t seg = 0;
    uint64_t prev_num = 0;
    bool first_point = true;
    for (const auto& [num, ps] : s.samples) {
      if (!first_point) {
        const uint64_t gap = num - prev_num - 1;
        if (gap > kMaxInterpolatedGap || (!fill && gap > 0)) {
          ++seg;
        } else {
          for (uint64_t g = 1; g <= gap; ++g) {
            SeriesPoint pt;
            pt.sample = prev_num + g;
            pt.values.assign(m, 0.0);
            pts.push_back(std::move(pt));
            segment.push_back(seg);
            have.emplace_back(m, false);
            known.push_back(false);
          }
        }
      }
      SeriesPoint pt;
      pt.sample = num;
      pt.ticks = ps.ticks;
      pt.values.assign(m, 0.0);
      std::vector<bool> h(m, false);
      for (const Chunk& c : ps.chunks)
        for (size_t k = 0; k < c.values.size() && c.first + k < m; ++k)
          pt.values[c.first + k] = c.values[k], h[c.first + k] = true;
      pts.push_back(std::move(pt));
      segment.push_back(seg);
      have.push_back(std::move(h));
      known.push_back(true);
      prev_num = num;
      first_point = false;
    }
    const size_t len = pts.size();
    // Stamps of lost samples: linear in sample number between the received neighbours (a lost
    // sample always lies between two received ones of its segment).
    for (size_t i = 0, prev = 0; i < len; ++i) {
      if (known[i]) {
        prev = i;
        continue;
      }
      size_t next = i + 1;
      while (!known[next]) ++next;
      const double f = double(i - prev) / double(next - prev);
      pts[i].ticks = pts[prev].ticks + uint64_t(f * double(pts[next].ticks - pts[prev].ticks));
    }
    // Missing values: linear in time between received values of the same segment; at a
    // segment's ends, the nearest received value; 0 where the segment has none.
    for (size_t k = 0; k < m; ++k) {
      long prev = -1;
      for (size_t i = 0; i < len; ++i) {
        if (prev >= 0 && segment[size_t(prev)] != segment[i]) prev = -1;
        if (have[i][k]) {
          prev = long(i);
          continue;
        }
        size_t next = i + 1;
        while (next < len && segment[next] == segment[i] && !have[next][k]) ++next;
        const bool has_next = next < len && segment[next] == segment[i];
        double v;
        if (prev < 0 && !has_next) {
          v = 0;
        } else if (prev < 0) {
          v = pts[next].values[k];
        } else if (!has_next) {
          v = pts[size_t(prev)].values[k];
        } else {
          const double t0 = double(pts[size_t(prev)].ticks), t1 = double(pts[next].ticks);
          const double f = t1 > t0 ? (double(pts[i].ticks) - t0) / (t1 - t0) : 0.5;
          v = pts[size_t(prev)].values[k] + f * (pts[next].values[k] - pts[size_t(prev)].values[k]);
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
    // Estimates from what was received, never from interpolated values.
    for (size_t k = 0; k < m; ++k) {
      std::vector<double> xs, dts;
      long prev = -1;
      for (size_t i = 0; i < len; ++i) {
        if (!have[i][k]) continue;
        if (!sr.accumulated[k]) {
          xs.push_back(pts[i].values[k]);
        } else if (prev >= 0) {
          const double dt = double(int64_t(pts[i].ticks - pts[size_t(prev)].ticks)) / tps;
          if (dt > 0)
            xs.push_back(pts[i].values[k] - pts[size_t(prev)].values[k]), dts.push_back(dt);
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

namespace {

// Text from the wire is validated on arrival; this keeps a dump from ever throwing regardless.
std::string Dump(const json& j, int indent = -1) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

// Writes to `path`.tmp and renames it over `path` once everything was written and closed.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)), out_(path_ + ".tmp") {}
  std::ofstream& out() { return out_; }
  bool Commit(std::string* error) {
    out_.close();
    if (!out_) {
      if (error) *error = path_ + ": cannot write";
      std::remove((path_ + ".tmp").c_str());
      return false;
    }
    if (std::rename((path_ + ".tmp").c_str(), path_.c_str()) != 0) {
      if (error) *error = path_ + ": cannot rename: " + std::strerror(errno);
      return false;
    }
    return true;
  }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace

bool Collector::WriteLogs(const std::string& dir, const CollectorReport& r, std::string* error) {
  mkdir(dir.c_str(), 0755);
  // The lines are made while writing: only (time, stream, point) is held for the merge.
  struct Ref {
    double time;
    size_t stream, point;
  };
  std::vector<Ref> merged;
  for (size_t si = 0; si < r.streams.size(); ++si)
    for (size_t pi = 0; pi < r.streams[si].series.size(); ++pi)
      merged.push_back({r.streams[si].series[pi].time, si, pi});
  std::stable_sort(merged.begin(), merged.end(),
                   [](const Ref& a, const Ref& b) { return a.time < b.time; });
  auto line = [&](const Ref& ref) {
    const StreamReport& sr = r.streams[ref.stream];
    const SeriesPoint& pt = sr.series[ref.point];
    return Dump({{"t", pt.time},
                 {"node", sr.host},
                 {"rank", sr.rank},
                 {"stream", sr.stream_id},
                 {"sample", pt.sample},
                 {"ticks", pt.ticks},
                 {"interpolated", pt.interpolated},
                 {"values", pt.values}});
  };
  bool ok = true;
  std::string first_error;
  auto commit = [&](AtomicFile& f) {
    std::string e;
    if (!f.Commit(&e) && ok) ok = false, first_error = e;
  };
  // Node logs by file name: two hosts whose names differ only in characters SafeName replaces
  // share a file rather than overwrite each other's.
  std::map<std::string, std::unique_ptr<AtomicFile>> node_files;
  std::map<std::string, AtomicFile*> by_host;
  for (const auto& n : r.nodes) {
    auto& f = node_files[SafeName(n.host)];
    if (!f) f = std::make_unique<AtomicFile>(dir + "/node-" + SafeName(n.host) + ".log");
    by_host[n.host] = f.get();
  }
  {
    AtomicFile all(dir + "/merged.log");
    for (const auto& ref : merged) {
      const std::string text = line(ref);
      all.out() << text << "\n";
      auto it = by_host.find(r.streams[ref.stream].host);
      if (it != by_host.end()) it->second->out() << text << "\n";
    }
    commit(all);
  }
  for (auto& [name, f] : node_files) commit(*f);
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
  // summary.json is written one node and one stream at a time: a JSON tree of every stream's
  // statistics at once would take far more memory than the data it describes.
  auto element = [](std::ostream& os, const json& j, bool first) {
    std::string text = Dump(j, 2), indented;
    for (char c : text) {
      indented += c;
      if (c == '\n') indented += "    ";
    }
    os << (first ? "\n    " : ",\n    ") << indented;
  };
  {
    AtomicFile f(dir + "/summary.json");
    std::ostream& os = f.out();
    const json datagrams = {{"accepted", r.accepted},   {"foreign", r.foreign},
                            {"malformed", r.malformed}, {"duplicate", r.duplicate},
                            {"refused", r.refused},     {"errors", r.errors},
                            {"seq_jumps", r.seq_jumps}};
    const json limits = {{"max_streams", kMaxStreams},
                         {"max_metrics", kMaxMetrics},
                         {"max_seq_jump", kMaxSeqJump},
                         {"max_interpolated_gap", kMaxInterpolatedGap}};
    os << "{\n  \"datagrams\": " << Dump(datagrams) << ",\n  \"limits\": " << Dump(limits)
       << ",\n  \"nodes\": [";
    bool first = true;
    for (const auto& n : r.nodes) {
      element(os,
              {{"host", n.host},
               {"node_id", n.node_id},
               {"ranks", n.ranks},
               {"expected_datagrams", n.expected},
               {"lost_datagrams", n.lost},
               {"loss_rate", n.loss_rate},
               {"stats", stats_json(n.stats)}},
              first);
      first = false;
    }
    os << (first ? "],\n  \"streams\": [" : "\n  ],\n  \"streams\": [");
    first = true;
    for (const auto& sr : r.streams) {
      element(os,
              {{"host", sr.host},
               {"node_id", sr.node_id},
               {"rank", sr.rank},
               {"stream", sr.stream_id},
               {"has_info", sr.has_info},
               {"expected_datagrams", sr.expected},
               {"received_datagrams", sr.received},
               {"lost_datagrams", sr.lost},
               {"loss_rate", sr.loss_rate},
               {"seq_epochs", sr.seq_epochs},
               {"samples_received", sr.samples_received},
               {"samples_interpolated", sr.samples_interpolated},
               {"gaps_not_interpolated", sr.gaps_not_interpolated},
               {"series_omitted", sr.series_omitted},
               {"first_sample", sr.first_sample},
               {"last_sample", sr.last_sample},
               {"metrics", sr.names},
               {"stats", stats_json(sr.stats)}},
              first);
      first = false;
    }
    os << (first ? "]\n}\n" : "\n  ]\n}\n");
    commit(f);
  }
  if (!ok && error) *error = first_error;
  return ok;
}

std::string Collector::RenderSummary(const CollectorReport& r) {
  std::ostringstream os;
  char b[512];
  std::snprintf(b, sizeof b,
                "datagrams: %llu accepted, %llu foreign, %llu malformed, %llu duplicate\n",
                (unsigned long long)r.accepted, (unsigned long long)r.foreign,
                (unsigned long long)r.malformed, (unsigned long long)r.duplicate);
  os << b;
  if (r.refused || r.errors || r.seq_jumps) {
    std::snprintf(b, sizeof b,
                  "  also %llu refused (more than %zu streams), %llu dropped on errors, %llu "
                  "sequence jumps (new epochs)\n",
                  (unsigned long long)r.refused, kMaxStreams, (unsigned long long)r.errors,
                  (unsigned long long)r.seq_jumps);
    os << b;
  }
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
    expected += s.Expected();
    received += s.Received();
  }
  char b[256];
  std::snprintf(b, sizeof b,
                "%zu node(s), %zu stream(s), %llu datagrams, loss %.2f%%, rejected %llu",
                nodes.size(), streams_.size(), (unsigned long long)received,
                expected ? 100.0 * double(expected - received) / double(expected) : 0.0,
                (unsigned long long)rejected());
  return b;
}

}  // namespace invmw::sampler
