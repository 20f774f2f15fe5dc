#include "fitter/probe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "fitter/fit.h"
#include "fitter/median.h"

namespace invmw::fit {

namespace {

std::string G(double v, const char* fmt = "%.4g") {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

double Number(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number())
    throw ProbeError(where + ": field '" + key + "' is missing or not a number");
  double v = j[key].get<double>();
  if (!std::isfinite(v) || v < 0)
    throw ProbeError(where + ": field '" + key + "' is " + G(v) + ", expected >= 0");
  return v;
}

struct Summary {
  double mean = 0, std_error = -1, min = 0, max = 0;
  size_t n = 0;
};

Summary Summarize(const std::vector<double>& v) {
  Summary s;
  s.n = v.size();
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.std_error = std::sqrt(ss / (v.size() - 1)) / std::sqrt(static_cast<double>(v.size()));
  }
  return s;
}

std::string Spread(const Summary& s) {
  return G(s.n, "%.0f") + (s.n == 1 ? " replication" : " replications") + ", " + G(s.min) + ".." +
         G(s.max) + " s";
}

}  // namespace

int PingPongReplications(const ProbeSamples& s) {
  int n = 0;
  for (const auto& p : s.pingpong) n = std::max(n, p.replication + 1);
  return n;
}

void ParseProbeLines(const std::string& text, const std::string& source, ProbeSamples* out) {
  // Replications of an earlier text keep their numbers; this text's come after them.
  const int first_replication = PingPongReplications(*out);
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] != '{') continue;  // launcher or library chatter
    std::string where = source + ":" + std::to_string(lineno);
    nlohmann::json j = nlohmann::json::parse(line.substr(b), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("probe") || !j["probe"].is_string())
      throw ProbeError(where + ": not a probe record (expected a JSON object with \"probe\")");
    std::string probe = j["probe"];
    if (probe == "pingpong") {
      out->pingpong.push_back(
          {Number(j, "bytes", where), Number(j, "mean_s", where),
           first_replication + static_cast<int>(Number(j, "replication", where))});
    } else if (probe == "barrier") {
      out->barrier.push_back(Number(j, "mean_s", where));
      out->barrier_ranks = static_cast<int>(Number(j, "ranks", where));
      if (j.contains("stall_mean_s")) {
        out->barrier_stall.push_back(Number(j, "stall_mean_s", where));
        out->barrier_compute_us = Number(j, "compute_us", where);
      }
    } else if (probe == "kernel") {
      if (!j.contains("kernel") || !j["kernel"].is_string())
        throw ProbeError(where + ": kernel record without a \"kernel\" name");
      std::string k = j["kernel"];
      if (k != "pair_check" && k != "pair_energy" && k != "bonded")
        throw ProbeError(where + ": unknown kernel '" + k +
                         "' (expected pair_check, pair_energy or bonded)");
      out->kernels[k].push_back(Number(j, "per_unit_s", where));
      out->kernel_units[k] = Number(j, "units", where);
    } else {
      throw ProbeError(where + ": unknown probe '" + probe +
                       "' (expected pingpong, barrier or kernel)");
    }
  }
}

PlatformTable EstimatePlatform(const ProbeSamples& s, const ProbeContext& c) {
  PlatformTable t;
  t.name = c.name;
  t.title = c.title.empty() ? c.name : c.title;
  t.description = (c.description.empty() ? "" : c.description + "; ") + "measured by invmw " +
                  "platform probe on " + c.where + " on " + c.date +
                  "; each value's source names the probe and its spread";
  auto command = [&](const char* probe) {
    auto it = c.commands.find(probe);
    return it == c.commands.end() ? std::string() : " (`" + it->second + "`)";
  };

  // a1, b1: the ping-pong model over all sizes and replications. b1 is the mean half round trip
  // of the smallest message and a1 the least-squares slope through it in absolute time: a fit
  // with relative errors weights a 0-byte message like a megabyte one, and on a rate-limited
  // network, where small messages pass at memory speed, it lets them decide the rate.
  if (s.pingpong.size() < 3)
    throw ProbeError("probe-pingpong gave " + std::to_string(s.pingpong.size()) +
                     " measurements; a1 and b1 need at least 3 (two sizes or more)");
  std::vector<double> sizes;
  DataTable d;
  d.source = "probe-pingpong";
  d.columns = {"bytes", "t"};
  for (const auto& p : s.pingpong) {
    if (!(p.mean_s > 0))
      throw ProbeError("probe-pingpong reported a non-positive time for " + G(p.bytes, "%.0f") +
                       " bytes");
    d.rows.push_back({p.bytes, p.mean_s});
    sizes.push_back(p.bytes);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() < 2) throw ProbeError("probe-pingpong measured one size only: a1 needs two");
  std::vector<double> smallest, rate;
  for (const auto& p : s.pingpong) {
    if (p.bytes == sizes.front()) smallest.push_back(p.mean_s);
    if (p.bytes > 0) rate.push_back(p.bytes / p.mean_s / 1e6);
  }
  Summary lat = Summarize(smallest);
  Model pp = Model::Load(ResolveModelPath("pingpong"));
  FitOptions o;
  o.weighting = "absolute";
  o.cross_validate = false;
  // b1 is the median over the rounds, like a1 below (net20, issue 20): a 0-byte round trip is a
  // few microseconds, so one round that met a quota stall or a descheduled rank (plfC: 0.12 and
  // 0.17 ms next to 5-8 us on two TCP platforms) moved the mean 8-10x and with it every
  // p x b1 term of the target's prediction. With two rounds the median is the mean.
  o.fixed["b1"] = sizes.front() == 0 ? Median(smallest) : 0;
  FitResult r = Fit(pp, d, o);
  if (!r.converged) throw ProbeError("the ping-pong fit did not converge: " + r.solver_message);
  const int replications = PingPongReplications(s);
  // With several replications (the pipeline's probe rounds, minutes apart), a1 is the median of
  // each round's own slope: one round caught in a slow moment of the machine, or a round whose
  // large messages partly rode the token bucket's burst, then moves a1 no more than any other
  // (issue 20). The pooled fit still gives the standard error.
  std::vector<double> round_a1;
  for (int k = 0; replications > 1 && k < replications; ++k) {
    DataTable dk;
    dk.source = d.source;
    dk.columns = d.columns;
    std::vector<double> ks;
    for (const auto& p : s.pingpong)
      if (p.replication == k) {
        dk.rows.push_back({p.bytes, p.mean_s});
        ks.push_back(p.bytes);
      }
    std::sort(ks.begin(), ks.end());
    if (std::unique(ks.begin(), ks.end()) - ks.begin() < 2) continue;
    FitResult rk = Fit(pp, dk, o);
    if (rk.converged) round_a1.push_back(rk.params[pp.ParamIndex("a1")].value);
  }
  if (round_a1.size() >= 2) {
    std::sort(round_a1.begin(), round_a1.end());  // the text names the range
    r.params[pp.ParamIndex("a1")].value = Median(round_a1);
  }
  // On a token bucket (an emulated platform's tc tbf, burst > 0), a1 is the marginal rate of the
  // messages far above the burst: the slope of a free-intercept least-squares line through the
  // sizes of at least twice the burst, per round (the median over rounds as above). Held at b1,
  // the line also charges to the bytes a delay every such message pays once (1 Gbit/s: 64 KiB
  // takes 1-2.6 ms, 256 KiB 3.7-7 ms where the rate says 0.5 and 2.1 ms), which made plfB-D's
  // 1 Gbit/s a1 60-100 MB/s against a 125 MB/s bucket, over-predicting p = 3 by up to 19%, and
  // 100 Mbit/s' 11.2-11.6 MB/s (net20, issue 20). Unlimited links keep the held line: their
  // large messages' times scatter too much for a free intercept.
  std::string marginal_text;
  if (c.burst_bytes > 0) {
    auto slope_a1 = [&](int k) -> double {  // k < 0: every round pooled
      double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
      std::vector<double> ks;
      for (const auto& p : s.pingpong) {
        if ((k >= 0 && p.replication != k) || p.bytes < 2 * c.burst_bytes) continue;
        n += 1, sx += p.bytes, sy += p.mean_s, sxx += p.bytes * p.bytes, sxy += p.bytes * p.mean_s;
        ks.push_back(p.bytes);
      }
      std::sort(ks.begin(), ks.end());
      if (std::unique(ks.begin(), ks.end()) - ks.begin() < 2) return NAN;
      const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
      return slope > 0 ? 1 / slope / 1e6 : NAN;
    };
    std::vector<double> marginal;
    for (int k = 0; replications > 1 && k < replications; ++k)
      if (std::isfinite(slope_a1(k))) marginal.push_back(slope_a1(k));
    if (marginal.empty() && std::isfinite(slope_a1(-1))) marginal.push_back(slope_a1(-1));
    if (!marginal.empty()) {
      std::sort(marginal.begin(), marginal.end());
      size_t n = marginal.size();
      double a1 = Median(marginal);
      // No link passes more than its bucket's rate (plfD's 1 Gbit/s rounds: 125-142 MB/s).
      const bool capped = c.burst_rate_mbs > 0 && a1 > c.burst_rate_mbs;
      if (capped) a1 = c.burst_rate_mbs;
      r.params[pp.ParamIndex("a1")].value = a1;
      marginal_text =
          "; a1 = marginal rate of the messages of at least twice the token bucket's " +
          G(c.burst_bytes, "%.0f") + "-byte burst (free-intercept slope" +
          (n >= 2 ? ", median of the " + std::to_string(n) + " replications' own, " +
                        G(marginal.front(), "%.4g") + ".." + G(marginal.back(), "%.4g") + " MB/s"
                  : std::string()) +
          ")" +
          (capped ? ", capped at the bucket's nominal " + G(c.burst_rate_mbs, "%.4g") + " MB/s"
                  : std::string());
    }
  }
  std::string b1_text =
      sizes.front() == 0
          ? std::string(smallest.size() >= 3 ? "probe-pingpong: median over the replications of "
                                               "the mean half round trip of 0-byte messages, "
                                             : "probe-pingpong: mean half round trip of 0-byte "
                                               "messages, ") +
                Spread(lat)
          : std::string("probe-pingpong measured no 0-byte message: b1 = 0");
  std::string fit_text =
      "least-squares slope of t = b1 + bytes/a1 (absolute errors, b1 held) through "
      "probe-pingpong means over " +
      std::to_string(sizes.size()) + " sizes " + G(sizes.front(), "%.0f") + ".." +
      G(sizes.back(), "%.0f") + " bytes x " + std::to_string(replications) + " replications" +
      command("pingpong") + ", " + c.where + ", " + c.date + "; mean abs. error " +
      G(r.responses.empty() ? NAN : r.responses[0].mape, "%.2g") + "%" +
      (round_a1.size() >= 2 ? "; a1 = median of the " + std::to_string(round_a1.size()) +
                                  " replications' own slopes (" + G(round_a1.front(), "%.4g") +
                                  ".." + G(round_a1.back(), "%.4g") + " MB/s)"
                            : std::string()) +
      marginal_text;
  for (const auto& p : r.params) {
    TableValue v;
    v.name = p.name;
    v.value = p.value;
    v.unit = p.unit;
    v.std_error = std::isfinite(p.std_error) ? p.std_error : -1;
    v.source = fit_text;
    if (p.name == "b1") {
      v.std_error = sizes.front() == 0 ? lat.std_error : -1;
      v.source = b1_text + command("pingpong") + ", " + c.where + ", " + c.date;
    }
    t.parameters.push_back(v);
  }
  // Raw figures for people comparing tables: latency and best observed rate.
  t.measures.push_back({"latency", lat.mean, "s",
                        "probe-pingpong: mean half round trip of " + G(sizes.front(), "%.0f") +
                            "-byte messages, " + Spread(lat),
                        lat.std_error});
  if (!rate.empty())
    t.measures.push_back({"mbs_max", *std::max_element(rate.begin(), rate.end()), "MB/s",
                          "probe-pingpong: highest bytes / half round trip over the sizes "
                          "(MB = 10^6 bytes)",
                          -1});

  // b5: barrier.
  if (s.barrier.empty()) throw ProbeError("probe-barrier gave no measurement (b5)");
  Summary bar = Summarize(s.barrier);
  const std::string loop_text = "probe-barrier: mean time per MPI_Barrier in a tight loop of " +
                                std::to_string(s.barrier_ranks) + " ranks, " + Spread(bar) +
                                command("barrier") + ", " + c.where + ", " + c.date;
  if (s.barrier_stall.empty()) {
    t.parameters.push_back({"b5", bar.mean, "s", loop_text, bar.std_error});
  } else {
    // What a synchronization costs an application that computes between them: on a CPU-quota
    // platform the polling rank 0 is often throttled when the last rank arrives, which the
    // tight loop never shows (issue 20).
    Summary st = Summarize(s.barrier_stall);
    t.parameters.push_back(
        {"b5", st.mean, "s",
         "probe-barrier --compute-us " + G(s.barrier_compute_us, "%.0f") +
             ": mean time from the last of " + std::to_string(s.barrier_ranks) +
             " ranks entering MPI_Barrier after a random compute phase to rank 0 (polling) "
             "leaving it, " +
             Spread(st) + command("barrier") + ", " + c.where + ", " + c.date,
         st.std_error});
    t.measures.push_back({"barrier_loop", bar.mean, "s", loop_text, bar.std_error});
    // The stall alone, as opal_stall's scale for its quota stall: the median over the
    // replications, because one round caught in a burst of throttling (or in none) moves a mean
    // of three by a factor of two (issue 20, the rounds of plfB's 1 Gbit/s and plfC's 100 Mbit/s).
    std::vector<double> stall = s.barrier_stall;
    for (double& v : stall) v = std::max(0.0, v - bar.mean);
    const size_t n = stall.size();
    const double med = Median(stall);
    t.parameters.push_back(
        {"b5_stall", med, "s",
         "probe-barrier --compute-us " + G(s.barrier_compute_us, "%.0f") + ": median over " +
             std::to_string(n) + " replications of the mean quota stall (time from the last of " +
             std::to_string(s.barrier_ranks) +
             " ranks entering MPI_Barrier after a random compute phase to rank 0 leaving it, "
             "less the tight-loop barrier), " +
             G(stall.front(), "%.4g") + ".." + G(stall.back(), "%.4g") + " s" + command("barrier") +
             ", " + c.where + ", " + c.date,
         st.std_error});
  }
  // The synchronization without the quota stall: opal_quota models the stall itself (b7 / p).
  t.parameters.push_back({"b5_loop", bar.mean, "s", loop_text, bar.std_error});
  if (c.burst_bytes >= 0) {
    t.parameters.push_back({"burst", c.burst_bytes, "bytes",
                            "token-bucket depth (burst) of " + c.where +
                                " from its definition (0: no rate limit); not measured",
                            -1});
  }
  if (c.burst_rate_mbs >= 0) {
    // The bucket refills at its configured rate, not at the rate a ping-pong measures through
    // it (a1, which also carries the stack's and the quota's delays): opal_stall's refill.
    // Without a bucket (burst 0) the refill never matters; a table rate must be > 0.
    if (c.burst_rate_mbs > 0)
      t.parameters.push_back(
          {"burst_rate", c.burst_rate_mbs, "MB/s",
           "token-bucket rate of " + c.where + " from its definition; not measured", -1});
    else
      t.parameters.push_back({"burst_rate", 1e6, "MB/s",
                              c.where + " has no rate limit (burst 0): a placeholder that no "
                                        "prediction uses; not measured",
                              -1});
  }
  if (c.nodes > 0) {
    t.parameters.push_back({"nodes", static_cast<double>(c.nodes), "",
                            "virtual nodes of " + c.where + " from its definition; not measured",
                            -1});
  }
  // What a rank that has used its share waits for: the rest of the CFS period, and whether its
  // core has CPU to spare (a core whose ranks' quotas add up to a whole core time-shares
  // instead of throttling). opal_quota's stall law needs all three (issue 20, qc20).
  if (c.cpu_quota >= 0) {
    t.parameters.push_back({"cpu_quota", c.cpu_quota, "",
                            "CPU quota per rank (fraction of one core) of " + c.where +
                                " from its definition (0: none); not measured",
                            -1});
  }
  if (c.quota_period_s >= 0) {
    t.parameters.push_back(
        {"quota_period", c.quota_period_s, "s",
         "CFS period of the CPU quota of " + c.where + " from its definition; not measured", -1});
  }
  if (c.cores > 0) {
    t.parameters.push_back({"cores", static_cast<double>(c.cores), "",
                            "CPUs the ranks of " + c.where +
                                " are placed on (slot r on CPU r mod cores), as the probe found "
                                "them; not measured",
                            -1});
  }

  // a2, a3, a4: the kernels, also recorded as kernel times for the transfer rule.
  const std::pair<const char*, const char*> kernels[] = {
      {"a2", "pair_check"}, {"a3", "pair_energy"}, {"a4", "bonded"}};
  const std::map<std::string, std::string> unit_text = {
      {"pair_check", "pair generated and checked"},
      {"pair_energy", "pair energy"},
      {"bonded", "mass center of bonded work"}};
  for (const auto& [param, kernel] : kernels) {
    auto it = s.kernels.find(kernel);
    if (it == s.kernels.end() || it->second.empty())
      throw ProbeError(std::string("probe-kernels gave no '") + kernel + "' measurement (" + param +
                       ")");
    Summary k = Summarize(it->second);
    std::string src = std::string("probe-kernels: opal-mini kernel ") + kernel + ", time per " +
                      unit_text.at(kernel) + " (" + G(s.kernel_units.at(kernel), "%.0f") +
                      " per call), " + Spread(k) + command("kernels") + ", " + c.where + ", " +
                      c.date;
    t.parameters.push_back({param, k.mean, "s", src, k.std_error});
    // The transfer rule's kernel time is a ratio of two platforms' rounds, and other work on the
    // machine only ever slows a round: on plfI (issue 20) 7 of the 15 rounds on five platforms
    // with the same CPU share ran 8-43% slow, two of emu-4x50-1gbit's three, so its mean gave a
    // ratio of 1.24 to the reference and every prediction there was 18-34% long. The fastest
    // round spread 1.35-1.45e-08 s over the five (mean 1.45-1.79e-08).
    t.kernels.push_back({param, k.min, "s",
                         "fastest replication (the transfer rule's kernel time; interference only "
                         "slows a replication), mean " +
                             G(k.mean) + " s; " + src,
                         k.std_error});
  }
  return t;
}

}  // namespace invmw::fit
