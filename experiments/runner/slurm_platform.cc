#include "experiments/runner/slurm_platform.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "common/config.h"

#ifndef INVMW_SLURM_PLATFORMS_SRC_DIR
#define INVMW_SLURM_PLATFORMS_SRC_DIR "platforms/slurm"
#endif

namespace invmw::experiment {

const char kBatchScript[] = R"sh(#!/bin/sh
# invmw experiment run: the batch script of one run (docs/slurm.md). Arguments: NODE_LOCAL_BASE
# (empty: none) RUN_DIR COMMAND...; the command runs as the argument vector "$@": nothing of it
# is parsed by this shell.
local_base=$1
run_dir=$2
shift 2
# At the time limit (and on scancel) Slurm sends SIGTERM to every process of the job, SIGKILL
# after KillWait. Caught (not ignored, which the command would inherit), it lets this script
# wait for the command's own shutdown and record its status.
trap 'echo "invmw batch script: SIGTERM (time limit or scancel)" >&2' TERM
printf '%s\n%s\n' "${SLURM_JOB_NODELIST:-}" "${SLURMD_NODENAME:-}" >"$run_dir/.invmw-nodes.tmp" &&
  mv -f "$run_dir/.invmw-nodes.tmp" "$run_dir/invmw-nodes"
out=$run_dir
if [ -n "$local_base" ]; then
  out=$local_base/invmw-job-${SLURM_JOB_ID:?}
  mkdir -m 700 -- "$out" || exit 125
fi
INVMW_OUTPUT_DIR=$out "$@"
rc=$?
if [ -n "$local_base" ]; then
  # The gather step: node-local results into the shared run directory; the node-local copy,
  # made above by this script, is removed only when the copy succeeded.
  if cp -pR -- "$out/." "$run_dir/"; then
    rm -rf -- "$out"
  else
    echo "invmw batch script: gathering $out into $run_dir failed; $out is kept" >&2
    rc=125
  fi
fi
printf '%s\n' "$rc" >"$run_dir/.invmw-exit.tmp" && mv -f "$run_dir/.invmw-exit.tmp" "$run_dir/invmw-exit-status"
exit "$rc"
)sh";

namespace {

std::string Where(const std::string& source, const toml::node& n) {
  return source + ":" + std::to_string(n.source().begin.line) + ": ";
}

bool IsDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, sep);) out.push_back(p);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

}  // namespace

bool ValidSlurmTime(const std::string& t) {
  std::string days, rest = t;
  size_t dash = t.find('-');
  if (dash != std::string::npos) {
    days = t.substr(0, dash);
    rest = t.substr(dash + 1);
    if (!IsDigits(days)) return false;
  }
  auto parts = Split(rest, ':');
  if (parts.empty() || parts.size() > 3) return false;
  for (const auto& p : parts)
    if (!IsDigits(p)) return false;
  return true;
}

long long SlurmTimeSeconds(const std::string& t) {
  if (!ValidSlurmTime(t)) return -1;
  long long days = 0;
  std::string rest = t;
  size_t dash = t.find('-');
  if (dash != std::string::npos) {
    days = std::stoll(t.substr(0, dash));
    rest = t.substr(dash + 1);
  }
  std::vector<long long> v;
  for (const auto& p : Split(rest, ':')) {
    if (p.size() > 12) return -1;
    v.push_back(std::stoll(p));
  }
  long long s = 0;
  if (dash == std::string::npos) {
    // MM, MM:SS, HH:MM:SS
    if (v.size() == 1) s = v[0] * 60;
    if (v.size() == 2) s = v[0] * 60 + v[1];
    if (v.size() == 3) s = v[0] * 3600 + v[1] * 60 + v[2];
  } else {
    // D-HH, D-HH:MM, D-HH:MM:SS
    s = v[0] * 3600 + (v.size() > 1 ? v[1] * 60 : 0) + (v.size() > 2 ? v[2] : 0);
  }
  return days * 86400 + s;
}

std::string JobTimeLimit(const std::string& platform_limit, double timeout_s) {
  long long minutes = static_cast<long long>(std::ceil(timeout_s / 60.0 - 1e-9));
  if (minutes < 1) minutes = 1;
  long long platform_s = platform_limit.empty() ? -1 : SlurmTimeSeconds(platform_limit);
  if (platform_s >= 0 && platform_s <= minutes * 60) return platform_limit;
  char b[64];
  std::snprintf(b, sizeof b, "%lld-%02lld:%02lld:00", minutes / 1440, minutes / 60 % 24,
                minutes % 60);
  return b;
}

std::string SlurmPlatformsDir() {
  const std::string env = config::Load().SLURM_PLATFORMS_DIR;
  if (!env.empty()) return env;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string bin(exe, static_cast<size_t>(n));
    std::string installed = bin.substr(0, bin.rfind('/')) + "/../share/invmw/slurm";
    if (access(installed.c_str(), R_OK | X_OK) == 0) return installed;
  }
  return INVMW_SLURM_PLATFORMS_SRC_DIR;
}

std::optional<SlurmPlatform> FindSlurmPlatform(const std::string& name) {
  const std::string path = SlurmPlatformsDir() + "/" + name + ".toml";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  SlurmPlatform p = ParseSlurmPlatform(ss.str(), path);
  if (p.name != name)
    throw std::runtime_error(path + ": 'name' is '" + p.name + "', but the file is " + name +
                             ".toml");
  p.path = path;
  return p;
}

std::vector<std::string> ListSlurmPlatforms() {
  std::vector<std::string> names;
  DIR* d = opendir(SlurmPlatformsDir().c_str());
  if (!d) return names;
  while (const dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 5 && n[0] != '.' && n.compare(n.size() - 5, 5, ".toml") == 0)
      names.push_back(n.substr(0, n.size() - 5));
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string SlurmPlatformSummary(const SlurmPlatform& p) {
  auto or_default = [](const std::string& v, const char* what) {
    return v.empty() ? std::string(what) : v;
  };
  std::string s = "Slurm batch jobs: partition " + or_default(p.partition, "(site default)");
  if (!p.account.empty()) s += ", account " + p.account;
  if (!p.qos.empty()) s += ", qos " + p.qos;
  if (p.nodes)
    s += ", " + std::to_string(p.nodes) + (p.nodes == 1 ? " node" : " nodes");
  else
    s += ", nodes as Slurm places the ranks";
  if (p.ntasks_per_node) s += ", " + std::to_string(p.ntasks_per_node) + " tasks per node";
  s += ", time limit " + or_default(p.time_limit, "(partition default)");
  if (!p.node_local_dir.empty()) s += ", node-local output in " + p.node_local_dir;
  return s;
}

SlurmPlatform ParseSlurmPlatform(const std::string& text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(source + ":" + std::to_string(e.source().begin.line) + ": " +
                             std::string(e.description()));
  }
  static const std::set<std::string> kKeys = {
      "kind",         "name",           "description",  "partition",       "account",
      "qos",          "time_limit",     "nodes",        "ntasks_per_node", "sbatch_options",
      "srun_options", "node_local_dir", "poll_interval"};
  for (const auto& [k, v] : doc)
    if (!kKeys.count(std::string(k.str())))
      throw std::runtime_error(Where(source, v) + "unknown key '" + std::string(k.str()) +
                               "' (expected kind, name, description, partition, account, qos, "
                               "time_limit, nodes, ntasks_per_node, sbatch_options, srun_options, "
                               "node_local_dir, poll_interval)");
  auto str = [&](const char* key, bool required) -> std::string {
    const toml::node* n = doc.get(key);
    if (!n) {
      if (required) throw std::runtime_error(source + ": missing '" + key + "' (a string)");
      return "";
    }
    auto v = n->value<std::string>();
    if (!v) throw std::runtime_error(Where(source, *n) + "'" + key + "' must be a string");
    // Values become single sbatch arguments ("--partition=VALUE"): no line breaks.
    if (v->find_first_of("\n\r") != std::string::npos)
      throw std::runtime_error(Where(source, *n) + "'" + key + "' must be one line");
    return *v;
  };
  auto words = [&](const char* key) {
    std::vector<std::string> out;
    const toml::node* n = doc.get(key);
    if (!n) return out;
    const toml::array* a = n->as_array();
    if (!a) throw std::runtime_error(Where(source, *n) + "'" + key + "' must be a list of strings");
    for (const auto& e : *a) {
      auto v = e.value<std::string>();
      if (!v || v->empty() || (*v)[0] != '-')
        throw std::runtime_error(Where(source, e) + "'" + key +
                                 "': every item must be an option string starting with '-', "
                                 "e.g. \"--exclusive\" or \"--constraint=ib\"");
      out.push_back(*v);
    }
    return out;
  };
  auto integer = [&](const char* key, int lo, int hi) {
    const toml::node* n = doc.get(key);
    if (!n) return 0;
    auto v = n->value_exact<int64_t>();  // value<int64_t>() casts 1e24 with UB
    if (!v || *v < lo || *v > hi)
      throw std::runtime_error(Where(source, *n) + "'" + key + "' must be an integer from " +
                               std::to_string(lo) + " to " + std::to_string(hi));
    return static_cast<int>(*v);
  };

  SlurmPlatform p;
  if (str("kind", true) != "slurm")
    throw std::runtime_error(Where(source, *doc.get("kind")) +
                             "'kind' must be \"slurm\" in a file of the Slurm platforms");
  p.name = str("name", true);
  if (p.name.empty() || p.name.find_first_of("/ \t") != std::string::npos)
    throw std::runtime_error(source + ": 'name' must be a non-empty word without '/'");
  p.description = str("description", true);
  p.partition = str("partition", false);
  p.account = str("account", false);
  p.qos = str("qos", false);
  p.time_limit = str("time_limit", false);
  if (!p.time_limit.empty() && !ValidSlurmTime(p.time_limit))
    throw std::runtime_error(Where(source, *doc.get("time_limit")) + "'time_limit' is '" +
                             p.time_limit +
                             "'; expected Slurm's MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
                             "D-HH:MM:SS");
  p.nodes = integer("nodes", 1, 100000);
  p.ntasks_per_node = integer("ntasks_per_node", 1, 100000);
  p.sbatch_options = words("sbatch_options");
  p.srun_options = words("srun_options");
  p.node_local_dir = str("node_local_dir", false);
  if (!p.node_local_dir.empty()) {
    if (p.node_local_dir[0] != '/')
      throw std::runtime_error(Where(source, *doc.get("node_local_dir")) +
                               "'node_local_dir' must be an absolute path");
    // The gather step copies the batch host's node-local directory only.
    if (p.nodes != 1)
      throw std::runtime_error(Where(source, *doc.get("node_local_dir")) +
                               "'node_local_dir' needs nodes = 1 (the gather step collects the "
                               "batch node's local directory only)");
  }
  if (const toml::node* n = doc.get("poll_interval")) {
    auto v = n->value<double>();
    if (!v || !(*v >= 0.1) || *v > 600)
      throw std::runtime_error(Where(source, *n) +
                               "'poll_interval' must be a number of seconds from 0.1 to 600");
    p.poll_interval_s = *v;
  }
  return p;
}

std::vector<std::string> SbatchPlatformOptions(const SlurmPlatform& p) {
  std::vector<std::string> a;
  if (!p.partition.empty()) a.push_back("--partition=" + p.partition);
  if (!p.account.empty()) a.push_back("--account=" + p.account);
  if (!p.qos.empty()) a.push_back("--qos=" + p.qos);
  if (!p.time_limit.empty()) a.push_back("--time=" + p.time_limit);
  if (p.nodes) a.push_back("--nodes=" + std::to_string(p.nodes));
  if (p.ntasks_per_node) a.push_back("--ntasks-per-node=" + std::to_string(p.ntasks_per_node));
  a.insert(a.end(), p.sbatch_options.begin(), p.sbatch_options.end());
  return a;
}

std::vector<std::string> SbatchArgv(const SlurmPlatform& p, const std::string& job_name,
                                    const std::string& run_dir, int ranks,
                                    const std::string& script,
                                    const std::vector<std::string>& command) {
  std::vector<std::string> a = {"sbatch",
                                "--parsable",
                                "--job-name=" + job_name,
                                "--chdir=" + run_dir,
                                "--output=" + run_dir + "/runner.log",
                                "--ntasks=" + std::to_string(ranks)};
  for (auto& o : SbatchPlatformOptions(p)) a.push_back(std::move(o));
  a.push_back(script);
  a.push_back(p.node_local_dir);
  a.push_back(run_dir);
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

}  // namespace invmw::experiment
