#include "platforms/cli/probe_runs.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

namespace invmw::platforms::cli {
namespace {

using fit::ProbeError;
using fit::ProbeSamples;

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

// Runs argv, stderr passed through, and returns its standard output; throws ProbeError with the
// command when it cannot start or does not exit with status 0.
std::string Capture(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) throw ProbeError("cannot create a pipe");
  pid_t pid = fork();
  if (pid < 0) throw ProbeError("cannot fork");
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "invmw: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                        : "signal " + std::to_string(WTERMSIG(status));
    throw ProbeError("`" + Joined(argv) + "` failed (" + why + ")");
  }
  return out;
}

// The probe records of `text` with `offset` added to their replication numbers, so that pooled
// --raw output pools again as it did the first time; other lines unchanged.
std::string RenumberReplications(const std::string& text, int offset) {
  if (offset == 0) return text;
  std::istringstream in(text);
  std::string out, line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("replication") &&
        j["replication"].is_number_integer()) {
      j["replication"] = j["replication"].get<int>() + offset;
      line = j.dump();
    }
    out += line + "\n";
  }
  return out;
}

std::string ReadRawFile(const std::string& f) {
  struct stat st;
  if (stat(f.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw ProbeError("--from-raw " + f + ": is a directory, not a --raw file");
  std::ifstream in(f);
  std::string text;
  if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in || in.bad()) throw ProbeError("--from-raw " + f + ": cannot read");
  return text;
}

size_t KernelRecords(const ProbeSamples& s) {
  size_t n = 0;
  for (const auto& [k, v] : s.kernels) n += v.size();
  return n;
}

// What file f added to `before` (giving `now`): some records, measured with the same settings,
// since pooling runs of other settings would average different things.
void CheckPooled(const std::string& f, const ProbeSamples& before, const ProbeSamples& now) {
  if (now.pingpong.size() == before.pingpong.size() &&
      now.barrier.size() == before.barrier.size() && KernelRecords(now) == KernelRecords(before))
    throw ProbeError("--from-raw " + f +
                     ": no probe records (expected the JSON lines of platform probe --raw)");
  if (!before.barrier.empty() && now.barrier.size() > before.barrier.size() &&
      now.barrier_ranks != before.barrier_ranks)
    throw ProbeError("--from-raw " + f + ": its barrier ran on " +
                     std::to_string(now.barrier_ranks) + " ranks, an earlier file's on " +
                     std::to_string(before.barrier_ranks));
  // A stall-aware b5 averaged with tight-loop barriers, or over other compute phases, would be
  // neither (issue 20).
  if (!before.barrier.empty() && now.barrier.size() > before.barrier.size()) {
    const bool had = !before.barrier_stall.empty(),
               has = now.barrier_stall.size() > before.barrier_stall.size();
    if (had != has)
      throw ProbeError("--from-raw " + f + ": its barrier ran " + (has ? "with" : "without") +
                       " --compute-us, an earlier file's " + (had ? "with" : "without") +
                       " (another --barrier-compute-us)");
    if (had && now.barrier_compute_us != before.barrier_compute_us)
      throw ProbeError("--from-raw " + f + ": its barrier ran with --compute-us " +
                       std::to_string(static_cast<long long>(now.barrier_compute_us)) +
                       ", an earlier file's with " +
                       std::to_string(static_cast<long long>(before.barrier_compute_us)) +
                       " (another --barrier-compute-us)");
  }
  for (const auto& [k, units] : now.kernel_units) {
    auto it = before.kernel_units.find(k);
    if (it != before.kernel_units.end() && it->second != units)
      throw ProbeError(
          "--from-raw " + f + ": kernel " + k + " ran on " +
          std::to_string(static_cast<long long>(units)) + " units per call, an earlier file's on " +
          std::to_string(static_cast<long long>(it->second)) + " (another --n or --rc)");
  }
}

}  // namespace

std::map<std::string, std::vector<std::string>> ProbeCommands(const ProbeSettings& s,
                                                              const std::string& bin,
                                                              const std::string& self) {
  const std::string& emu = s.emu;
  // One command per probe; inside an emulated platform each rank joins its CPU slot.
  auto mpi = [&](int ranks, const std::vector<std::string>& probe) {
    std::vector<std::string> cmd;
    if (!emu.empty()) cmd = {self, "platform", "exec", emu, "--ranks", std::to_string(ranks), "--"};
    std::istringstream ls(s.launcher);
    for (std::string w; ls >> w;) cmd.push_back(w);
    cmd.insert(cmd.end(), {"-np", std::to_string(ranks)});
    if (!emu.empty()) cmd.insert(cmd.end(), {self, "platform", "slot", "--"});
    cmd.insert(cmd.end(), probe.begin(), probe.end());
    return cmd;
  };
  std::map<std::string, std::vector<std::string>> cmds;
  std::vector<std::string> pp = {
      bin + "/probe-pingpong", "--sizes",     s.sizes, "--reps", s.pp_reps,
      "--replications",        s.replications};
  if (!s.pp_max_time.empty()) pp.insert(pp.end(), {"--max-time", s.pp_max_time});
  cmds["pingpong"] = mpi(2, pp);
  std::vector<std::string> bar = {bin + "/probe-barrier", "--reps", s.bar_reps, "--replications",
                                  s.replications};
  if (std::atol(s.bar_compute_us.c_str()) > 0)
    bar.insert(bar.end(), {"--compute-us", s.bar_compute_us, "--rounds", s.bar_rounds});
  cmds["barrier"] = mpi(std::atoi(s.bar_ranks.c_str()), bar);
  std::vector<std::string> kern = {bin + "/probe-kernels",
                                   "--n",
                                   s.n,
                                   "--rc",
                                   s.rc,
                                   "--reps",
                                   s.k_reps,
                                   "--replications",
                                   s.k_replications.empty() ? s.replications : s.k_replications,
                                   "--min-time",
                                   s.k_min_time};
  if (emu.empty()) {
    cmds["kernels"] = kern;
  } else {
    // No MPI launcher sets a rank: slot 0 is named explicitly.
    cmds["kernels"] = {
        self, "platform", "exec", emu, "--ranks", "1", "--", "env", "INVMW_EMULATE_RANK=0",
        self, "platform", "slot", "--"};
    cmds["kernels"].insert(cmds["kernels"].end(), kern.begin(), kern.end());
  }
  return cmds;
}

std::vector<std::string> OnlyProbes(const std::string& only, std::string* error) {
  static const char* const kProbes[] = {"pingpong", "barrier", "kernels"};
  std::vector<std::string> named;
  std::istringstream in(only);
  for (std::string w; std::getline(in, w, ',');) {
    if (std::find(std::begin(kProbes), std::end(kProbes), w) == std::end(kProbes)) {
      *error = "--only '" + only + "': unknown probe '" + w +
               "' (expected a comma-separated list of pingpong, barrier, kernels)";
      return {};
    }
    if (std::find(named.begin(), named.end(), w) != named.end()) {
      *error = "--only '" + only + "': '" + w + "' named twice";
      return {};
    }
    named.push_back(w);
  }
  if (named.empty()) {
    *error = "--only '" + only + "': expected a comma-separated list of pingpong, barrier, kernels";
    return {};
  }
  std::vector<std::string> ordered;
  for (const char* p : kProbes)
    if (std::find(named.begin(), named.end(), p) != named.end()) ordered.push_back(p);
  return ordered;
}

ProbeSamples RunProbes(const std::map<std::string, std::vector<std::string>>& cmds,
                       const std::vector<std::string>& probes,
                       const std::vector<std::string>& hidden_dirs, bool quiet,
                       fit::ProbeContext* context, std::string* all) {
  ProbeSamples samples;
  for (const std::string& probe : probes) {
    const std::vector<std::string>& cmd = cmds.at(probe);
    if (!quiet) std::fprintf(stderr, "invmw: probe: %s\n", Joined(cmd).c_str());
    std::string text = Capture(cmd);
    fit::ParseProbeLines(text, "probe-" + probe, &samples);
    *all += text;
    std::string shown = Joined(cmd);
    for (const std::string& dir : hidden_dirs)
      for (size_t at; (at = shown.find(dir)) != std::string::npos;) shown.erase(at, dir.size());
    context->commands[probe] = shown;
  }
  return samples;
}

ProbeSamples PoolRawFiles(const std::vector<std::string>& files, fit::ProbeContext* context,
                          std::string* all) {
  ProbeSamples samples;
  std::string names;
  for (const std::string& f : files) {
    const std::string text = ReadRawFile(f);
    // What the earlier files gave, to see what this one adds and whether it matches.
    const ProbeSamples before = samples;
    *all += RenumberReplications(text, fit::PingPongReplications(samples));
    fit::ParseProbeLines(text, f, &samples);
    CheckPooled(f, before, samples);
    names += (names.empty() ? "" : ", ") + f.substr(f.find_last_of('/') + 1);
  }
  for (const char* probe : {"pingpong", "barrier", "kernels"})
    context->commands[probe] = "pooled from " + names;
  return samples;
}

}  // namespace invmw::platforms::cli
