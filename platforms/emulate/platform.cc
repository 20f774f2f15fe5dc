#include "platforms/emulate/platform.h"

#include <dirent.h>
#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#ifndef INVMW_EMULATED_DIR
#define INVMW_EMULATED_DIR "platforms/emulated"
#endif

namespace invmw::emulate {

namespace {

// A number as a person would write it (0.0009999, 0.05), not std::to_string's 0.001000.
std::string Num(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

std::string Where(const std::string& source, const toml::source_region& r) {
  return source + ":" + std::to_string(r.begin.line) + ": ";
}

bool IsDir(const std::string& d) {
  DIR* dp = opendir(d.c_str());
  if (!dp) return false;
  closedir(dp);
  return true;
}

// Splits "100mbit" into 100 and "mbit".
bool SplitNumber(const std::string& s, double* value, std::string* unit) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return false;
  try {
    size_t used = 0;
    *value = std::stod(s.substr(0, i), &used);
    if (used != i) return false;
  } catch (const std::exception&) {
    return false;
  }
  *unit = s.substr(i);
  for (auto& c : *unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::isfinite(*value) && *value >= 0;
}

bool ParseDurationUs(const std::string& s, int64_t* us) {
  double v;
  std::string unit;
  if (!SplitNumber(s, &v, &unit)) return false;
  double mult = unit == "s" ? 1e6 : unit == "ms" ? 1e3 : unit == "us" ? 1 : -1;
  if (mult < 0) return false;
  *us = static_cast<int64_t>(std::llround(v * mult));
  return true;
}

// The platform everybody has: the machine as it is.
Platform LocalPlatform() {
  Platform p;
  p.name = "local";
  p.description =
      "The machine as it is: no CPU quota, no network namespace; the launcher decides "
      "placement. More ranks than cores measure time-sharing, not parallelism.";
  p.network = Network::kHost;
  p.yield_when_idle = false;
  return p;
}

}  // namespace

int64_t Platform::QuotaUs() const {
  return SlotQuotaUs(0);
}

int64_t Platform::SlotPeriodUs(int slot) const {
  // The golden ratio's fractional part spreads any number of slots over [0, 1) with no two
  // close together (a low-discrepancy sequence), whatever the slot count.
  constexpr double kGolden = 0.6180339887498949;
  double where = std::fmod(static_cast<double>(slot) * kGolden, 1.0);
  return static_cast<int64_t>(
      std::llround(static_cast<double>(period_us) * (1.0 + period_spread * where)));
}

int64_t Platform::SlotQuotaUs(int slot) const {
  return static_cast<int64_t>(std::llround(cpu_quota * static_cast<double>(SlotPeriodUs(slot))));
}

std::string PlatformsDir() {
  if (const char* e = getenv("INVMW_EMULATE_DIR"); e && *e) return e;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string bin(exe, static_cast<size_t>(n));
    std::string installed = bin.substr(0, bin.rfind('/')) + "/../share/invmw/emulated";
    if (IsDir(installed)) return installed;
  }
  return INVMW_EMULATED_DIR;
}

bool ParseRate(const std::string& s, int64_t* bps) {
  double v;
  std::string unit;
  if (!SplitNumber(s, &v, &unit)) return false;
  double mult = unit == "bit"    ? 1
                : unit == "kbit" ? 1e3
                : unit == "mbit" ? 1e6
                : unit == "gbit" ? 1e9
                                 : -1;
  if (mult < 0 || v <= 0) return false;
  *bps = static_cast<int64_t>(std::llround(v * mult));
  return *bps > 0;
}

bool ParseBytes(const std::string& s, int64_t* bytes) {
  double v;
  std::string unit;
  if (!SplitNumber(s, &v, &unit)) return false;
  double mult = unit.empty() || unit == "b"   ? 1
                : unit == "k" || unit == "kb" ? 1024
                : unit == "m" || unit == "mb" ? 1024.0 * 1024
                                              : -1;
  if (mult < 0) return false;
  *bytes = static_cast<int64_t>(std::llround(v * mult));
  return true;
}

namespace {

// kind = "simgrid": a simulated cluster (platforms/simulated). The table is resolved and
// exported when the platform runs (platforms/cli), where the fitter's table reader lives.
Platform ParseSimulated(const toml::table& doc, const std::string& source) {
  static const std::set<std::string> kKeys = {"name",  "description", "kind",        "table",
                                              "nodes", "cfg",         "computation", "caveat"};
  for (const auto& [k, v] : doc)
    if (!kKeys.count(std::string(k.str())))
      throw PlatformError(Where(source, k.source()) + "unknown key '" + std::string(k.str()) +
                          "' for kind = \"simgrid\" (expected name, description, caveat, kind, "
                          "table, nodes, cfg, computation)");
  auto where = [&](const char* key) {
    const toml::node* n = doc.get(key);
    return n ? Where(source, n->source()) : source + ": ";
  };
  auto str = [&](const char* key, bool required, const std::string& def) -> std::string {
    const toml::node* n = doc.get(key);
    if (!n) {
      if (required) throw PlatformError(source + ": missing '" + key + "' (a string)");
      return def;
    }
    auto v = n->value<std::string>();
    if (!v || v->empty())
      throw PlatformError(Where(source, n->source()) + "'" + key + "' must be a non-empty string");
    return *v;
  };
  Platform p;
  p.simulated = true;
  p.name = str("name", true, "");
  p.description = str("description", true, "");
  p.caveat = doc.get("caveat") ? str("caveat", false, "") : "";
  if (p.name.find_first_of("/ \t") != std::string::npos)
    throw PlatformError(where("name") + "'name' must be a non-empty word without '/'");
  p.table = str("table", true, "");
  const toml::node* n = doc.get("nodes");
  if (!n) throw PlatformError(source + ": missing 'nodes' (simulated hosts, an integer)");
  // value_exact, here and below: value<int64_t>() would convert a float such as 1e24 with
  // undefined behaviour instead of refusing it.
  auto v = n->value_exact<int64_t>();
  if (!v || *v < 2 || *v > 1000000)
    throw PlatformError(where("nodes") +
                        "'nodes' must be an integer from 2 to 1000000 "
                        "(simulated hosts; ranks beyond them share hosts)");
  p.nodes = static_cast<int>(*v);
  if (const toml::node* c = doc.get("cfg")) {
    const toml::array* a = c->as_array();
    if (!a) throw PlatformError(where("cfg") + "'cfg' must be an array of strings");
    for (const auto& item : *a) {
      auto s = item.value<std::string>();
      // NAME:VALUE, as smpirun's --cfg takes it; passed as one argument, never through a shell.
      if (!s || s->empty() || s->find(':') == std::string::npos ||
          s->find(' ') != std::string::npos)
        throw PlatformError(Where(source, item.source()) +
                            "'cfg' entries must be SMPI settings NAME:VALUE without blanks "
                            "(e.g. \"smpi/async-small-thresh:65536\")");
      p.cfg.push_back(*s);
    }
  }
  p.computation = str("computation", false, "declared");
  if (p.computation != "declared" && p.computation != "host")
    throw PlatformError(where("computation") + "'computation' is '" + p.computation +
                        "'; expected \"declared\" (smpi_execute_flops only, deterministic) or "
                        "\"host\" (SMPI also times this machine's computation)");
  return p;
}

}  // namespace

Platform ParsePlatform(const std::string& text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw PlatformError(source + ":" + std::to_string(e.source().begin.line) + ": " +
                        std::string(e.description()));
  }
  if (const toml::node* k = doc.get("kind")) {
    auto v = k->value<std::string>();
    if (v && *v == "simgrid") return ParseSimulated(doc, source);
    throw PlatformError(Where(source, k->source()) +
                        "'kind' must be \"simgrid\" (a simulated cluster); emulated platforms "
                        "have no kind");
  }
  static const std::set<std::string> kKeys = {
      "name",      "description", "caveat",          "nodes",   "ranks",
      "cpu_quota", "period_us",   "period_spread",   "network", "rate",
      "burst",     "queue",       "yield_when_idle", "mtu",     "pin_cores"};
  for (const auto& [k, v] : doc) {
    if (!kKeys.count(std::string(k.str())))
      throw PlatformError(Where(source, k.source()) + "unknown key '" + std::string(k.str()) +
                          "' (expected name, description, caveat, nodes, cpu_quota, period_us, "
                          "period_spread, network, rate, burst, queue, mtu, yield_when_idle, "
                          "pin_cores)");
  }
  auto str = [&](const char* key, bool required, std::string def) -> std::string {
    const toml::node* n = doc.get(key);
    if (!n) {
      if (required) throw PlatformError(source + ": missing '" + key + "' (a string)");
      return def;
    }
    auto v = n->value<std::string>();
    if (!v) throw PlatformError(Where(source, n->source()) + "'" + key + "' must be a string");
    return *v;
  };
  auto where = [&](const char* key) {
    const toml::node* n = doc.get(key);
    return n ? Where(source, n->source()) : source + ": ";
  };

  Platform p;
  p.name = str("name", true, "");
  p.description = str("description", true, "");
  p.caveat = str("caveat", false, "");
  if (p.name.empty() || p.name.find_first_of("/ \t") != std::string::npos)
    throw PlatformError(where("name") + "'name' must be a non-empty word without '/'");

  const char* nodes_key = doc.get("nodes") ? "nodes" : "ranks";
  if (const toml::node* n = doc.get(nodes_key)) {
    auto v = n->value_exact<int64_t>();
    if (!v || *v < 1 || *v > 1024)
      throw PlatformError(where(nodes_key) + "'" + nodes_key +
                          "' must be an integer from 1 to 1024 (virtual nodes, one rank each)");
    p.nodes = static_cast<int>(*v);
  }

  if (const toml::node* n = doc.get("cpu_quota")) {
    auto v = n->value<double>();
    if (!v || !(*v >= 0) || *v > 1)
      throw PlatformError(where("cpu_quota") +
                          "'cpu_quota' must be a number in [0, 1] (fraction of one core per rank)");
    p.cpu_quota = *v;
  }
  if (p.HasQuota() && p.nodes == 0)
    throw PlatformError(source + ": 'cpu_quota' needs 'nodes' (how many rank slots get it)");
  if (const toml::node* n = doc.get("period_us")) {
    auto v = n->value_exact<int64_t>();
    if (!v || *v < kMinCfsUs || *v > kMaxCfsPeriodUs)
      throw PlatformError(where("period_us") + "'period_us' must be an integer from " +
                          std::to_string(kMinCfsUs) + " to " + std::to_string(kMaxCfsPeriodUs));
    if (!p.HasQuota())
      throw PlatformError(where("period_us") + "'period_us' without a 'cpu_quota' means nothing");
    p.period_us = *v;
  } else if (p.HasQuota()) {
    // Measured (docs/platforms.md): periods under about two scheduler ticks give a CPU-bound
    // rank visibly less than its quota (50% at 2 ms: 34%), while from 10 ms on every quota is
    // met; the busy-poll artefact does not grow with it. Very small quotas need longer periods
    // to reach the kernel's 1 ms minimum.
    p.period_us = std::max<int64_t>(
        kDefaultPeriodUs,
        static_cast<int64_t>(std::ceil(static_cast<double>(kMinCfsUs) / p.cpu_quota)));
    if (p.period_us > kMaxCfsPeriodUs)
      throw PlatformError(where("cpu_quota") + "cpu_quota " + Num(p.cpu_quota) +
                          " is under the smallest share the kernel can give: its shortest " +
                          "quota, " + std::to_string(kMinCfsUs) + " us, needs a period over " +
                          "its longest, " + std::to_string(kMaxCfsPeriodUs) + " us (use " +
                          "cpu_quota >= 0.001)");
  }
  if (const toml::node* n = doc.get("period_spread")) {
    auto v = n->value<double>();
    if (!v || !(*v >= 0) || *v > kMaxPeriodSpread)
      throw PlatformError(where("period_spread") +
                          "'period_spread' must be a number from 0 to 0.5 (how far the slots' "
                          "CFS periods lie above period_us, a fraction of it)");
    if (!p.HasQuota())
      throw PlatformError(where("period_spread") +
                          "'period_spread' without a 'cpu_quota' means nothing");
    p.period_spread = *v;
  } else if (p.HasQuota()) {
    // A period near the kernel's longest (a tiny quota's) leaves less room above it.
    p.period_spread =
        std::min(kDefaultPeriodSpread, static_cast<double>(kMaxCfsPeriodUs - p.period_us) /
                                           static_cast<double>(p.period_us));
  }
  if (p.HasQuota() && p.period_us * (1.0 + p.period_spread) > kMaxCfsPeriodUs)
    throw PlatformError(where("period_spread") + "period_us " + std::to_string(p.period_us) +
                        " x (1 + period_spread " + Num(p.period_spread) +
                        ") is over the kernel's longest period, " +
                        std::to_string(kMaxCfsPeriodUs) + " us: lower one of them");
  if (p.HasQuota() && p.QuotaUs() < kMinCfsUs) {
    int64_t need = static_cast<int64_t>(std::ceil(static_cast<double>(kMinCfsUs) / p.cpu_quota));
    throw PlatformError(where("period_us") + "cpu_quota " + Num(p.cpu_quota) + " x period_us " +
                        std::to_string(p.period_us) + " = " + std::to_string(p.QuotaUs()) +
                        " us of CPU per period, but the kernel rejects quotas under " +
                        std::to_string(kMinCfsUs) +
                        " us: use period_us >= " + std::to_string(need));
  }

  std::string net = str("network", false, "host");
  if (net == "host") {
    p.network = Network::kHost;
  } else if (net == "shm") {
    p.network = Network::kShm;
  } else if (net == "tcp") {
    p.network = Network::kTcp;
  } else {
    throw PlatformError(where("network") + "'network' is '" + net +
                        "'; expected \"shm\" (shared memory), \"tcp\" (loopback of a network "
                        "namespace) or \"host\"");
  }
  for (const char* k : {"rate", "burst", "queue", "mtu"})
    if (doc.get(k) && p.network != Network::kTcp)
      throw PlatformError(where(k) + "'" + k + "' applies only to network = \"tcp\"");
  if (p.network == Network::kTcp) {
    p.rate_text = str("rate", false, "");
    if (!p.rate_text.empty() && !ParseRate(p.rate_text, &p.rate_bps))
      throw PlatformError(where("rate") + "'rate' is '" + p.rate_text +
                          "'; expected a positive rate with unit bit, kbit, mbit or gbit "
                          "(e.g. \"100mbit\")");
    std::string burst = str("burst", false, "80kb");
    if (!ParseBytes(burst, &p.burst_bytes))
      throw PlatformError(where("burst") + "'burst' is '" + burst +
                          "'; expected a size in bytes, k/kb or m/mb (e.g. \"80kb\")");
    if (const toml::node* n = doc.get("mtu")) {
      auto v = n->value_exact<int64_t>();
      if (!v || *v < kMinMtu || *v > kLoopbackMtu)
        throw PlatformError(where("mtu") + "'mtu' must be a whole number of bytes from " +
                            std::to_string(kMinMtu) + " to " + std::to_string(kLoopbackMtu));
      p.mtu = *v;
    }
    if (p.rate_bps && p.burst_bytes <= p.mtu)
      throw PlatformError(where("burst") + "'burst' of " + std::to_string(p.burst_bytes) +
                          " bytes does not exceed the loopback MTU (" + std::to_string(p.mtu) +
                          " bytes): the token bucket would never pass a full packet");
    // Deep enough that the bucket never drops: a dropped packet costs TCP a retransmission
    // timeout (200 ms at least), which no link parameter describes. With 50 ms, three opal-mini
    // servers on 10 Mbit/s lost ~1000 packets a run and retransmitted 10% of their segments
    // (docs/platforms.md).
    std::string queue = str("queue", false, "2s");
    if (!ParseDurationUs(queue, &p.queue_us) || p.queue_us < 1000)
      throw PlatformError(where("queue") + "'queue' is '" + queue +
                          "'; expected a duration of at least 1ms (s, ms or us)");
    if (p.rate_bps && p.caveat.empty())
      throw PlatformError(source +
                          ": a rate-limited loopback is one medium shared by all virtual nodes and "
                          "both directions; state that in 'caveat'");
  }
  if (const toml::node* n = doc.get("yield_when_idle")) {
    auto v = n->value<bool>();
    if (!v) throw PlatformError(where("yield_when_idle") + "'yield_when_idle' must be true/false");
    p.yield_when_idle = *v;
  }
  if (const toml::node* n = doc.get("pin_cores")) {
    auto v = n->value<bool>();
    if (!v) throw PlatformError(where("pin_cores") + "'pin_cores' must be true/false");
    p.pin_cores = *v;
  }
  return p;
}

Platform LoadPlatform(const std::string& name_or_path) {
  std::string path;
  bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".toml") == 0);
  if (is_path) {
    path = name_or_path;
  } else {
    if (name_or_path.empty()) throw PlatformError("empty platform name");
    path = PlatformsDir() + "/" + name_or_path + ".toml";
    if (access(path.c_str(), F_OK) != 0 && errno == ENOENT &&
        access((SimulatedDir() + "/" + name_or_path + ".toml").c_str(), F_OK) == 0)
      path = SimulatedDir() + "/" + name_or_path + ".toml";
    if (access(path.c_str(), F_OK) != 0) {
      // Only a file that is not there is "no such platform": a directory this user may not
      // enter (a checkout under a private directory) is that, and says so.
      if (errno != ENOENT && errno != ENOTDIR)
        throw PlatformError("cannot read run platform '" + name_or_path + "': " + path + ": " +
                            std::strerror(errno) +
                            " (set INVMW_EMULATE_DIR to a readable copy of " +
                            "the platform files)");
      if (name_or_path == "local") return LocalPlatform();
      std::string list;
      for (const auto& n : ListPlatforms()) list += (list.empty() ? "" : ", ") + n;
      throw PlatformError("no run platform '" + name_or_path + "' in " + PlatformsDir() +
                          " (available: " + list + ")");
    }
  }
  std::ifstream in(path);
  if (!in) throw PlatformError(path + ": cannot open run platform file: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  Platform p = ParsePlatform(ss.str(), path);
  p.path = path;
  return p;
}

std::string SimulatedDir() {
  std::string d = PlatformsDir();
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  size_t slash = d.rfind('/');
  return (slash == std::string::npos ? std::string(".") : d.substr(0, slash)) + "/simulated";
}

std::vector<std::string> ListPlatforms() {
  std::vector<std::string> out;
  for (const std::string& dir : {PlatformsDir(), SimulatedDir()}) {
    DIR* dp = opendir(dir.c_str());
    if (!dp) continue;
    while (dirent* e = readdir(dp)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".toml") == 0 &&
          std::find(out.begin(), out.end(), n.substr(0, n.size() - 5)) == out.end())
        out.push_back(n.substr(0, n.size() - 5));
    }
    closedir(dp);
  }
  if (std::find(out.begin(), out.end(), "local") == out.end()) out.push_back("local");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> LauncherOptions(const Platform& p) {
  std::vector<std::string> o;
  if (p.simulated) return o;  // smpirun is the launcher there (platforms/cli/simulated_exec.h)
  if (p.nodes > 0) {
    // The cgroup quota, not a core binding, decides how much CPU a rank gets; binding would pin
    // several quota-limited ranks to one core while the other idles.
    o.insert(o.end(), {"--oversubscribe", "--bind-to", "none"});
  }
  if (p.network == Network::kTcp) {
    // Inside the namespace Open MPI would otherwise prefer shared memory, and it excludes
    // 127.0.0.1 from TCP unless told to include lo. The btl settings hold only for the ob1
    // messaging layer, so it is named (Open MPI's UCX layer would bypass them).
    o.insert(o.end(), {"--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca",
                       "btl_tcp_if_include", "lo"});
  }
  if (p.yield_when_idle) o.insert(o.end(), {"--mca", "mpi_yield_when_idle", "1"});
  return o;
}

std::vector<std::pair<std::string, std::string>> LauncherEnvironment(const Platform& p) {
  std::vector<std::pair<std::string, std::string>> env;
  if (p.simulated) return env;
  if (p.nodes > 0) {
    env.emplace_back("OMPI_MCA_rmaps_base_oversubscribe", "1");
    env.emplace_back("OMPI_MCA_hwloc_base_binding_policy", "none");
  }
  if (p.network == Network::kTcp) {
    env.emplace_back("OMPI_MCA_pml", "ob1");
    env.emplace_back("OMPI_MCA_btl", "tcp,self");
    env.emplace_back("OMPI_MCA_btl_tcp_if_include", "lo");
    // MPICH (Debian's is ch4:ucx): no shared-memory shortcut between local ranks, and UCX
    // restricted to TCP on lo, else it moves data through shared memory or cross-memory attach.
    env.emplace_back("MPIR_CVAR_NOLOCAL", "1");
    env.emplace_back("UCX_TLS", "tcp,self");
    env.emplace_back("UCX_NET_DEVICES", "lo");
  }
  if (p.yield_when_idle) env.emplace_back("OMPI_MCA_mpi_yield_when_idle", "1");
  return env;
}

}  // namespace invmw::emulate
