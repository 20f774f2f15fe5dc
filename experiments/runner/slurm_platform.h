// Slurm run platforms: a design's runs submitted as batch jobs (docs/slurm.md).
//
// A file platforms/slurm/NAME.toml (or $INVMW_SLURM_PLATFORMS_DIR/NAME.toml) names a Slurm
// platform; `invmw experiment run DESIGN --platform NAME` then submits every run as one batch
// job (sbatch) instead of running it here:
//
//   kind = "slurm"
//   name = "mycluster"
//   description = "..."
//   partition = "compute"        # sbatch --partition; absent: the site's default
//   account = "proj42"           # sbatch --account; absent: the user's default
//   qos = "normal"               # sbatch --qos
//   time_limit = "00:10:00"      # sbatch --time (Slurm's formats: MM, MM:SS, HH:MM:SS, D-HH,
//                                # D-HH:MM, D-HH:MM:SS); absent: the partition's default
//   nodes = 1                    # sbatch --nodes; absent: Slurm places the tasks
//   ntasks_per_node = 4          # sbatch --ntasks-per-node
//   sbatch_options = ["--exclusive", "--constraint=ib"]   # more sbatch options, as words
//   srun_options = ["--mpi=pmix"]                         # options of srun inside the job
//   node_local_dir = "/tmp"      # write the run to node-local storage, gathered at the end
//                                # (needs nodes = 1)
//   poll_interval = 2            # seconds between squeue polls
//
// Why one job per run and not a job array: the points of a design differ in their rank count,
// and an array's tasks all get the same resources; a resumed or repeated run is one sbatch of
// that run alone; and each row records its own job id. A design of thousands of short runs
// would load the scheduler less as arrays (per rank count); not done.
//
// Nothing in a platform file reaches a shell: the job's command is an argument vector passed to
// a fixed batch script (kBatchScript) that runs it as "$@".
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace invmw::experiment {

struct SlurmPlatform {
  std::string name, description, path;
  std::string partition, account, qos, time_limit;
  int nodes = 0, ntasks_per_node = 0;  // 0: not given
  std::vector<std::string> sbatch_options, srun_options;
  std::string node_local_dir;
  double poll_interval_s = 2;
};

// $INVMW_SLURM_PLATFORMS_DIR, else the installed share/invmw/slurm next to the executable,
// else the source tree's platforms/slurm.
std::string SlurmPlatformsDir();

// The Slurm platform NAME when SlurmPlatformsDir() has NAME.toml, else nullopt. A file that is
// there but wrong throws std::runtime_error naming file, line and field.
std::optional<SlurmPlatform> FindSlurmPlatform(const std::string& name);
SlurmPlatform ParseSlurmPlatform(const std::string& text, const std::string& source);

// Names (without .toml) of the files in SlurmPlatformsDir(), sorted; empty when it has none or
// does not exist. `invmw platform list` shows them beside the emulated and simulated platforms.
std::vector<std::string> ListSlurmPlatforms();

// One line of `invmw platform list`: the platform's kind and what it asks sbatch for, e.g.
// "Slurm batch jobs: partition compute, 1 node, time limit 00:10:00".
std::string SlurmPlatformSummary(const SlurmPlatform& p);

// Slurm's time formats (see the header comment).
bool ValidSlurmTime(const std::string& t);

// A Slurm time in seconds: the formats above, which are also those of squeue's elapsed time
// (%M: M:SS, H:MM:SS, D-H:MM:SS); -1 when `t` is none of them (e.g. "UNLIMITED").
long long SlurmTimeSeconds(const std::string& t);

// The --time of a run's job: the platform's time_limit, or the design's per-run timeout rounded
// up to whole minutes (Slurm's unit) as D-HH:MM:SS when that is shorter or the platform sets
// none. The runner itself cancels a job at the exact timeout; this limit holds when no runner
// is watching (killed, interrupted).
std::string JobTimeLimit(const std::string& platform_limit, double timeout_s);

// The batch script: arguments NODE_LOCAL_BASE (empty: none) RUN_DIR COMMAND...
extern const char kBatchScript[];

// The sbatch options the platform file asks for (partition, account, qos, time, nodes, tasks
// per node, sbatch_options), in that order.
std::vector<std::string> SbatchPlatformOptions(const SlurmPlatform& p);

// sbatch's argument vector for one run: the platform's options, the job's name, working
// directory, log and task count, then the script and its arguments.
std::vector<std::string> SbatchArgv(const SlurmPlatform& p, const std::string& job_name,
                                    const std::string& run_dir, int ranks,
                                    const std::string& script,
                                    const std::vector<std::string>& command);

}  // namespace invmw::experiment
