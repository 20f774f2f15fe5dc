// `invmw platform probe`: measures a machine's (or an emulated platform's) model parameters with
// the microbenchmarks of platforms/probes and writes them as a platform table (fitter/probe.h
// says how each value is estimated).
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "fitter/file_io.h"
#include "fitter/platform_table.h"
#include "fitter/probe.h"
#include "platforms/cli/probe_runs.h"
#include "platforms/emulate/platform.h"

#ifndef INVMW_FIT_MPI_LAUNCHER
#define INVMW_FIT_MPI_LAUNCHER "mpirun"
#endif

namespace invmw::platforms::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

Args ProbeArgs(ProbeSettings* s) {
  Args args(
      "invmw platform probe --name NAME [--platform EMU] [--out FILE] [options]",
      "Measures this machine's model parameters with the probes of platforms/probes and\n"
      "writes a platform table: a1 and b1 from a fit of t = b1 + bytes/a1 to ping-pong times\n"
      "over message sizes (MB = 10^6 bytes), b5 from the barrier time, a2/a3/a4 from opal-mini's\n"
      "kernels (also recorded under [kernels] for the transfer rule of invmw predict). Every\n"
      "value carries its standard error and a source naming the probe, its spread over the\n"
      "replications, the command and the host. With --platform, the probes run inside that\n"
      "emulated platform (invmw platform exec, each rank in its CPU slot).");
  args.Option("--name", "NAME", &s->name, "table name (required)")
      .Option("--title", "TEXT", &s->title, "title for people (default: the name)")
      .Option("--out", "FILE", &s->out, "table to write (default: <tables dir>/NAME.toml)")
      .Flag("--force", &s->force, "overwrite an existing table or --raw file")
      .Option("--platform", "EMU", &s->emu, "run the probes inside this emulated platform")
      .Option("--replications", "K", &s->replications, "replications of every probe (default 3)")
      .Option("--sizes", "LIST", &s->sizes, "ping-pong sizes in bytes (default 0,8,...,1048576)")
      .Option("--pingpong-reps", "R", &s->pp_reps, "round trips per ping-pong measurement (200)")
      .Option("--pingpong-max-time", "S", &s->pp_max_time,
              "at most about S seconds per ping-pong measurement (fewer round trips, 3 at least;"
              " for slow networks)")
      .Option("--barrier-reps", "R", &s->bar_reps, "barriers per measurement (default 1000)")
      .Option("--barrier-ranks", "P", &s->bar_ranks, "ranks in the barrier probe (default 2)")
      .Option("--barrier-compute-us", "US", &s->bar_compute_us,
              "b5 from synchronizations after random compute phases of about US microseconds "
              "(quota stalls included; default 2000; 0: b5 from the tight loop)")
      .Option("--barrier-rounds", "N", &s->bar_rounds,
              "synchronizations per measurement with --barrier-compute-us (default 200)")
      .Option("--n", "N", &s->n, "mass centers of the kernels' system (default 2000)")
      .Option("--rc", "RC", &s->rc, "cut-off of the kernels' pair list, Angstrom (default 10)")
      .Option("--kernel-reps", "R", &s->k_reps, "kernel calls per measurement (default 3)")
      .Option("--kernel-replications", "K", &s->k_replications,
              "replications of the kernels probe (default: --replications); the transfer "
              "rule's kernel time is the fastest of them, so more short ones make it robust "
              "against moments of interference")
      .Option("--kernel-min-time", "S", &s->k_min_time,
              "more kernel calls until S seconds have passed (default 0.25: many CPU-quota "
              "periods)")
      .Option("--launcher", "CMD", &s->launcher, "MPI launcher (default: the build's mpirun)")
      .Option("--probes", "DIR", &s->probes_dir,
              "directory of the probe binaries (default: invmw's)")
      .Option("--raw", "FILE", &s->raw, "also keep the probes' JSON lines in FILE")
      .Option("--only", "LIST", &s->only,
              "run only these probes (comma-separated: pingpong, barrier, kernels; default all "
              "three). Without all three no table can be estimated: --raw is then required and "
              "is all that is written, for pooling with --from-raw; --name and --out are not "
              "used")
      .Repeated("--from-raw", "FILE", &s->from_raw,
                "probe nothing: pool the replications of earlier runs' --raw files into the "
                "table (repeatable; --platform then only names where they ran, and the "
                "measurement options are not used)")
      .Option("--tables", "DIR", &s->tables_dir, "tables directory for the default --out")
      .Flag("--quiet", &s->quiet, "do not print the commands as they run")
      .Epilog(
          "Examples:\n  invmw platform probe --name mynode --out mynode.toml\n"
          "  invmw platform probe --name emu-100mbit --platform emu-4x50-100mbit --out e.toml\n"
          "  invmw platform compare mynode e.toml fast-cops\n"
          "  invmw platform probe --name n --replications 1 --raw r1.jsonl --out r1.toml  # x3\n"
          "  invmw platform probe --name n --from-raw r1.jsonl --from-raw r2.jsonl \\\n"
          "      --from-raw r3.jsonl --out n.toml      # rounds spread over time, pooled\n"
          "  invmw platform probe --only kernels --kernel-replications 2 --raw k1.jsonl\n"
          "      # more kernel rounds between the full ones; add --from-raw k1.jsonl ...\n\n"
          "MPI runs as root need OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1.\n");
  return args;
}

// True when --only leaves out a probe, so that no table can be estimated.
bool PartialRun(const ProbeSettings& s) {
  std::string ignored;
  return OnlyProbes(s.only, &ignored).size() < 3;
}

// The options' values and the table to write (s->out, defaulted); false with *error (the
// message without the verb's prefix).
bool CheckSettings(ProbeSettings* s, std::string* error) {
  auto fail = [error](const std::string& message) {
    *error = message;
    return false;
  };
  if (OnlyProbes(s->only, error).empty()) return false;
  if (PartialRun(*s)) {
    if (!s->from_raw.empty())
      return fail("--only is a measurement option: --from-raw pools files and measures nothing");
    if (s->raw.empty())
      return fail("--only " + s->only +
                  " cannot make a table (it needs all three probes): give --raw FILE to keep "
                  "the records and pool them later with --from-raw");
    if (!s->out.empty()) return fail("--only " + s->only + " writes no table: drop --out");
  } else if (s->name.empty()) {
    return fail("--name is required");
  }
  if (s->name.find_first_of("/ \t") != std::string::npos)
    return fail("--name '" + s->name + "' must not contain '/' or blanks");
  for (const auto& [opt, v] :
       {std::pair<const char*, const std::string*>{"--replications", &s->replications},
        {"--pingpong-reps", &s->pp_reps},
        {"--barrier-reps", &s->bar_reps},
        {"--barrier-ranks", &s->bar_ranks},
        {"--barrier-rounds", &s->bar_rounds},
        {"--n", &s->n},
        {"--kernel-reps", &s->k_reps},
        {"--kernel-replications", &s->k_replications}}) {
    if (v == &s->k_replications && v->empty()) continue;  // not given: --replications
    char* end = nullptr;
    long x = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || x < 1)
      return fail(std::string(opt) + " '" + *v + "': expected a positive integer");
  }
  for (const auto& [opt, v] :
       {std::pair<const char*, const std::string*>{"--pingpong-max-time", &s->pp_max_time},
        {"--kernel-min-time", &s->k_min_time}}) {
    char* end = nullptr;
    double x = std::strtod(v->c_str(), &end);
    if (!v->empty() && (*end != '\0' || !(x >= 0)))
      return fail(std::string(opt) + " '" + *v + "': expected a number of seconds");
  }
  {
    char* end = nullptr;
    long x = std::strtol(s->bar_compute_us.c_str(), &end, 10);
    if (s->bar_compute_us.empty() || *end != '\0' || x < 0 || x > 10000000)
      return fail("--barrier-compute-us '" + s->bar_compute_us +
                  "': expected microseconds, 0..10000000");
  }
  if (std::atoi(s->bar_ranks.c_str()) < 2) return fail("--barrier-ranks must be at least 2");
  if (!s->raw.empty() && !s->force && access(s->raw.c_str(), F_OK) == 0)
    return fail(s->raw + " exists (use --force to overwrite it)");
  if (PartialRun(*s)) return true;
  if (s->out.empty()) s->out = fit::PlatformTablesDir(s->tables_dir) + "/" + s->name + ".toml";
  if (!s->force && access(s->out.c_str(), F_OK) == 0)
    return fail(s->out + " exists (use --force to overwrite it)");
  return true;
}

// Writes the table of the pooled samples (and `all`, their JSON lines, for --raw).
void WriteTable(const ProbeSettings& s, const fit::ProbeSamples& samples, const std::string& all,
                fit::ProbeContext* c) {
  if (!s.raw.empty()) fit::WriteFileAtomic(s.raw, all);
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c->date = date;
  fit::PlatformTable t = fit::EstimatePlatform(samples, *c);
  fit::WriteFileAtomic(s.out, "# Measured by `invmw platform probe`; see docs/fitter.md.\n" +
                                  fit::FormatPlatformTable(t));
  std::printf("wrote %s\n", s.out.c_str());
  for (const auto& v : t.parameters) {
    std::printf("  %-3s %12.5g %-5s", v.name.c_str(), v.value, v.unit.c_str());
    if (v.std_error >= 0) std::printf(" +- %.2g", v.std_error);
    std::printf("\n");
  }
}

// The directory of the probe binaries, with all three in it; "" with *error.
std::string ProbesDir(const ProbeSettings& s, std::string* error) {
  std::string bin = s.probes_dir.empty() ? invmw::cli::ExecutableDir() : s.probes_dir;
  for (const char* p : {"probe-pingpong", "probe-barrier", "probe-kernels"}) {
    if (access((bin + "/" + p).c_str(), X_OK) != 0) {
      *error = bin + "/" + p + " not found (build the probes: cmake --build BUILD --target " + p +
               ", or give --probes DIR)";
      return "";
    }
  }
  return bin;
}

int RunProbe(int argc, char** argv) {
  ProbeSettings s;
  s.launcher = INVMW_FIT_MPI_LAUNCHER;
  Args args = ProbeArgs(&s);
  bool done = false;
  if (int rc_ = args.Parse(argc, argv, &done); rc_ || done) return rc_;
  std::string err;
  if (!CheckSettings(&s, &err)) return Fail("platform probe: " + err);
  if (!s.emu.empty() && s.from_raw.empty()) {
    // The probes here are MPI programs under mpirun; a simulated cluster runs SMPI builds
    // under smpirun, and its parameters are its table's by construction.
    try {
      emulate::Platform p = emulate::LoadPlatform(s.emu);
      if (p.simulated)
        return Fail("platform probe: --platform " + s.emu +
                    " is a simulated cluster: its parameters are those of its table (" + p.table +
                    "); to measure them through SMPI run `invmw platform exec " + s.emu +
                    " --ranks 2 -- probe-pingpong-smpi` (or probe-barrier-smpi)");
    } catch (const emulate::PlatformError& e) {
      return Fail(std::string("platform probe: ") + e.what());
    }
  }

  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  fit::ProbeContext c;
  c.name = s.name;
  c.title = s.title;
  c.where = s.emu.empty() ? std::string("host ") + host
                          : "emulated platform " + s.emu + " on host " + host;
  if (!s.emu.empty()) {
    // The token bucket's depth and the number of virtual nodes are part of the platform's
    // definition, not something a probe can time: the table carries them for opal_quota.
    try {
      emulate::Platform p = emulate::LoadPlatform(s.emu);
      if (!p.simulated) {
        c.burst_bytes = p.rate_bps ? static_cast<double>(p.burst_bytes) : 0.0;
        c.nodes = p.nodes;
        c.burst_rate_mbs = static_cast<double>(p.rate_bps) / 8e6;
        // The quota, its period and the CPUs the ranks are pinned to (the session's placement:
        // slot r on the r-th CPU this process may use) decide how long a throttled rank waits
        // and whether its core has CPU to spare: opal_quota's stall law (issue 20, qc20).
        c.cpu_quota = p.HasQuota() ? p.cpu_quota : 0;
        c.quota_period_s = p.HasQuota() ? static_cast<double>(p.period_us) * 1e-6 : 0;
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0) c.cores = CPU_COUNT(&set);
      }
    } catch (const emulate::PlatformError& e) {
      if (s.from_raw.empty()) return Fail(std::string("platform probe: ") + e.what());
      // Pooling stored rounds of a platform this build no longer knows: no burst entry.
    }
  }
  if (!s.from_raw.empty()) {
    try {
      std::string all;
      const fit::ProbeSamples samples = PoolRawFiles(s.from_raw, &c, &all);
      WriteTable(s, samples, all, &c);
      return 0;
    } catch (const std::exception& e) {
      return Fail(std::string("platform probe: ") + e.what());
    }
  }

  const std::string bin = ProbesDir(s, &err);
  if (bin.empty()) return Fail("platform probe: " + err);
  const std::string self = invmw::cli::ExecutableDir() + "/invmw";
  // More ranks than cores in the barrier probe must not be refused by Open MPI.
  setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  try {
    std::string all;
    const fit::ProbeSamples samples =
        RunProbes(ProbeCommands(s, bin, self), OnlyProbes(s.only, &err),
                  {bin + "/", invmw::cli::ExecutableDir() + "/"}, s.quiet, &c, &all);
    if (PartialRun(s)) {
      fit::WriteFileAtomic(s.raw, all);
      std::printf("wrote %s (%s only: pool it into a table with --from-raw)\n", s.raw.c_str(),
                  s.only.c_str());
    } else {
      WriteTable(s, samples, all, &c);
    }
    return 0;
  } catch (const std::exception& e) {
    return Fail(std::string("platform probe: ") + e.what());
  }
}

}  // namespace

INVMW_VERB("platform probe", "measure a platform's parameters with microbenchmarks", RunProbe);

}  // namespace invmw::platforms::cli
