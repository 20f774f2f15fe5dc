// `invmw platform probe`: measures a machine's (or an emulated platform's) model parameters with
// the microbenchmarks of platforms/probes and writes them as a platform table (fitter/probe.h
// says how each value is estimated).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "fitter/file_io.h"
#include "fitter/probe.h"

#ifndef INVMW_FIT_MPI_LAUNCHER
#define INVMW_FIT_MPI_LAUNCHER "mpirun"
#endif

namespace invmw::fit::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

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

int RunProbe(int argc, char** argv) {
  bool done = false, force = false, quiet = false;
  std::string name, title, out, emu, launcher = INVMW_FIT_MPI_LAUNCHER, probes_dir, raw, tables_dir;
  std::vector<std::string> from_raw;
  std::string sizes = "0,8,64,512,4096,32768,262144,1048576", pp_reps = "200", bar_reps = "1000",
              replications = "3", bar_ranks = "2", n = "2000", rc = "10", k_reps = "3", pp_max_time,
              k_min_time = "0.25";
  Args args(
      "invmw platform probe --name NAME [--platform EMU] [--out FILE] [options]",
      "Measures this machine's model parameters with the probes of platforms/probes and\n"
      "writes a platform table: a1 and b1 from a fit of t = b1 + bytes/a1 to ping-pong times\n"
      "over message sizes (MB = 10^6 bytes), b5 from the barrier time, a2/a3/a4 from opal-mini's\n"
      "kernels (also recorded under [kernels] for the transfer rule of invmw predict). Every\n"
      "value carries its standard error and a source naming the probe, its spread over the\n"
      "replications, the command and the host. With --platform, the probes run inside that\n"
      "emulated platform (invmw platform exec, each rank in its CPU slot).");
  args.Option("--name", "NAME", &name, "table name (required)")
      .Option("--title", "TEXT", &title, "title for people (default: the name)")
      .Option("--out", "FILE", &out, "table to write (default: <tables dir>/NAME.toml)")
      .Flag("--force", &force, "overwrite an existing table")
      .Option("--platform", "EMU", &emu, "run the probes inside this emulated platform")
      .Option("--replications", "K", &replications, "replications of every probe (default 3)")
      .Option("--sizes", "LIST", &sizes, "ping-pong sizes in bytes (default 0,8,...,1048576)")
      .Option("--pingpong-reps", "R", &pp_reps, "round trips per ping-pong measurement (200)")
      .Option("--pingpong-max-time", "S", &pp_max_time,
              "at most about S seconds per ping-pong measurement (fewer round trips, 3 at least;"
              " for slow networks)")
      .Option("--barrier-reps", "R", &bar_reps, "barriers per measurement (default 1000)")
      .Option("--barrier-ranks", "P", &bar_ranks, "ranks in the barrier probe (default 2)")
      .Option("--n", "N", &n, "mass centers of the kernels' system (default 2000)")
      .Option("--rc", "RC", &rc, "cut-off of the kernels' pair list, Angstrom (default 10)")
      .Option("--kernel-reps", "R", &k_reps, "kernel calls per measurement (default 3)")
      .Option("--kernel-min-time", "S", &k_min_time,
              "more kernel calls until S seconds have passed (default 0.25: many CPU-quota "
              "periods)")
      .Option("--launcher", "CMD", &launcher, "MPI launcher (default: the build's mpirun)")
      .Option("--probes", "DIR", &probes_dir, "directory of the probe binaries (default: invmw's)")
      .Option("--raw", "FILE", &raw, "also keep the probes' JSON lines in FILE")
      .Repeated("--from-raw", "FILE", &from_raw,
                "probe nothing: pool the replications of earlier runs' --raw files into the "
                "table (repeatable; --platform then only names where they ran, and the "
                "measurement options are not used)")
      .Option("--tables", "DIR", &tables_dir, "tables directory for the default --out")
      .Flag("--quiet", &quiet, "do not print the commands as they run")
      .Epilog(
          "Examples:\n  invmw platform probe --name mynode --out mynode.toml\n"
          "  invmw platform probe --name emu-100mbit --platform emu-4x50-100mbit --out e.toml\n"
          "  invmw platform compare mynode e.toml fast-cops\n"
          "  invmw platform probe --name n --replications 1 --raw r1.jsonl --out r1.toml  # x3\n"
          "  invmw platform probe --name n --from-raw r1.jsonl --from-raw r2.jsonl \\\n"
          "      --from-raw r3.jsonl --out n.toml      # rounds spread over time, pooled\n\n"
          "MPI runs as root need OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.\n");
  if (int rc_ = args.Parse(argc, argv, &done); rc_ || done) return rc_;
  if (name.empty()) return Fail("platform probe: --name is required");
  if (name.find_first_of("/ \t") != std::string::npos)
    return Fail("platform probe: --name '" + name + "' must not contain '/' or blanks");
  for (const auto& [opt, v] :
       {std::pair<const char*, std::string*>{"--replications", &replications},
        {"--pingpong-reps", &pp_reps},
        {"--barrier-reps", &bar_reps},
        {"--barrier-ranks", &bar_ranks},
        {"--n", &n},
        {"--kernel-reps", &k_reps}}) {
    char* end = nullptr;
    long x = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || x < 1)
      return Fail(std::string("platform probe: ") + opt + " '" + *v +
                  "': expected a positive integer");
  }
  for (const auto& [opt, v] :
       {std::pair<const char*, std::string*>{"--pingpong-max-time", &pp_max_time},
        {"--kernel-min-time", &k_min_time}}) {
    char* end = nullptr;
    double x = std::strtod(v->c_str(), &end);
    if (!v->empty() && (*end != '\0' || !(x >= 0)))
      return Fail(std::string("platform probe: ") + opt + " '" + *v +
                  "': expected a number of seconds");
  }
  if (std::atoi(bar_ranks.c_str()) < 2)
    return Fail("platform probe: --barrier-ranks must be at least 2");
  if (out.empty()) out = PlatformTablesDir(tables_dir) + "/" + name + ".toml";
  if (!force && access(out.c_str(), F_OK) == 0)
    return Fail("platform probe: " + out + " exists (use --force to overwrite it)");

  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  ProbeContext c;
  c.name = name;
  c.title = title;
  c.where =
      emu.empty() ? std::string("host ") + host : "emulated platform " + emu + " on host " + host;
  // Writes the table of the pooled samples; `all` is their JSON lines, for --raw.
  auto write = [&](const ProbeSamples& samples, const std::string& all) {
    if (!raw.empty()) WriteFileAtomic(raw, all);
    char date[32];
    std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    c.date = date;
    PlatformTable t = EstimatePlatform(samples, c);
    WriteFileAtomic(out, "# Measured by `invmw platform probe`; see docs/fitter.md.\n" +
                             FormatPlatformTable(t));
    std::printf("wrote %s\n", out.c_str());
    for (const auto& v : t.parameters) {
      std::printf("  %-3s %12.5g %-5s", v.name.c_str(), v.value, v.unit.c_str());
      if (v.std_error >= 0) std::printf(" +- %.2g", v.std_error);
      std::printf("\n");
    }
    return 0;
  };
  if (!from_raw.empty()) {
    try {
      ProbeSamples samples;
      std::string all, names;
      for (const std::string& f : from_raw) {
        struct stat st;
        if (stat(f.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
          return Fail("platform probe: --from-raw " + f + ": is a directory, not a --raw file");
        std::ifstream in(f);
        std::string text;
        if (in) text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        if (!in || in.bad()) return Fail("platform probe: --from-raw " + f + ": cannot read");
        // What the earlier files gave, to see what this one adds and whether it matches.
        const ProbeSamples before = samples;
        all += RenumberReplications(text, PingPongReplications(samples));
        ParseProbeLines(text, f, &samples);
        size_t kernel_records = 0, kernel_records_before = 0;
        for (const auto& [k, v] : samples.kernels) kernel_records += v.size();
        for (const auto& [k, v] : before.kernels) kernel_records_before += v.size();
        if (samples.pingpong.size() == before.pingpong.size() &&
            samples.barrier.size() == before.barrier.size() &&
            kernel_records == kernel_records_before)
          return Fail("platform probe: --from-raw " + f +
                      ": no probe records (expected the JSON lines of platform probe --raw)");
        // Pooling runs of other settings would average different things.
        if (!before.barrier.empty() && samples.barrier.size() > before.barrier.size() &&
            samples.barrier_ranks != before.barrier_ranks)
          return Fail("platform probe: --from-raw " + f + ": its barrier ran on " +
                      std::to_string(samples.barrier_ranks) + " ranks, an earlier file's on " +
                      std::to_string(before.barrier_ranks));
        for (const auto& [k, units] : samples.kernel_units) {
          auto it = before.kernel_units.find(k);
          if (it != before.kernel_units.end() && it->second != units)
            return Fail("platform probe: --from-raw " + f + ": kernel " + k + " ran on " +
                        std::to_string(static_cast<long long>(units)) +
                        " units per call, an earlier file's on " +
                        std::to_string(static_cast<long long>(it->second)) +
                        " (another --n or --rc)");
        }
        names += (names.empty() ? "" : ", ") + f.substr(f.find_last_of('/') + 1);
      }
      for (const char* probe : {"pingpong", "barrier", "kernels"})
        c.commands[probe] = "pooled from " + names;
      return write(samples, all);
    } catch (const std::exception& e) {
      return Fail(std::string("platform probe: ") + e.what());
    }
  }

  std::string bin = probes_dir.empty() ? invmw::cli::ExecutableDir() : probes_dir;
  for (const char* p : {"probe-pingpong", "probe-barrier", "probe-kernels"}) {
    if (access((bin + "/" + p).c_str(), X_OK) != 0)
      return Fail("platform probe: " + bin + "/" + p +
                  " not found (build the probes: cmake --build BUILD --target " + p +
                  ", or give --probes DIR)");
  }
  std::string self = invmw::cli::ExecutableDir() + "/invmw";
  // More ranks than cores in the barrier probe must not be refused by Open MPI.
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);

  // One command per probe; inside an emulated platform each rank joins its CPU slot.
  auto mpi = [&](int ranks, const std::vector<std::string>& probe) {
    std::vector<std::string> cmd;
    if (!emu.empty()) cmd = {self, "platform", "exec", emu, "--ranks", std::to_string(ranks), "--"};
    std::istringstream ls(launcher);
    for (std::string w; ls >> w;) cmd.push_back(w);
    cmd.insert(cmd.end(), {"-np", std::to_string(ranks)});
    if (!emu.empty()) cmd.insert(cmd.end(), {self, "platform", "slot", "--"});
    cmd.insert(cmd.end(), probe.begin(), probe.end());
    return cmd;
  };
  std::map<std::string, std::vector<std::string>> cmds;
  std::vector<std::string> pp = {bin + "/probe-pingpong", "--sizes",   sizes, "--reps", pp_reps,
                                 "--replications",        replications};
  if (!pp_max_time.empty()) pp.insert(pp.end(), {"--max-time", pp_max_time});
  cmds["pingpong"] = mpi(2, pp);
  cmds["barrier"] = mpi(std::atoi(bar_ranks.c_str()), {bin + "/probe-barrier", "--reps", bar_reps,
                                                       "--replications", replications});
  std::vector<std::string> kern = {bin + "/probe-kernels",
                                   "--n",
                                   n,
                                   "--rc",
                                   rc,
                                   "--reps",
                                   k_reps,
                                   "--replications",
                                   replications,
                                   "--min-time",
                                   k_min_time};
  if (emu.empty()) {
    cmds["kernels"] = kern;
  } else {
    // No MPI launcher sets a rank: slot 0 is named explicitly.
    cmds["kernels"] = {
        self, "platform", "exec", emu, "--ranks", "1", "--", "env", "INVMW_EMULATE_RANK=0",
        self, "platform", "slot", "--"};
    cmds["kernels"].insert(cmds["kernels"].end(), kern.begin(), kern.end());
  }

  try {
    ProbeSamples samples;
    std::string all;
    for (const char* probe : {"pingpong", "barrier", "kernels"}) {
      if (!quiet) std::fprintf(stderr, "invmw: probe: %s\n", Joined(cmds[probe]).c_str());
      std::string text = Capture(cmds[probe]);
      ParseProbeLines(text, std::string("probe-") + probe, &samples);
      all += text;
      // The provenance names the probe's own arguments, not the absolute paths of this build.
      std::string shown = Joined(cmds[probe]);
      for (std::string dir : {bin + "/", invmw::cli::ExecutableDir() + "/"})
        for (size_t at; (at = shown.find(dir)) != std::string::npos;) shown.erase(at, dir.size());
      c.commands[probe] = shown;
    }
    return write(samples, all);
  } catch (const std::exception& e) {
    return Fail(std::string("platform probe: ") + e.what());
  }
}

}  // namespace

INVMW_VERB("platform probe", "measure a platform's parameters with microbenchmarks", RunProbe);

}  // namespace invmw::fit::cli
