#include "experiments/runner/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <optional>
#include <set>
#include <stdexcept>

#include "common/file_io.h"
#include "common/subprocess.h"
#include "experiments/runner/progress.h"
#include "experiments/runner/responses.h"
#include "results/results_db.h"
#include "experiments/runner/run_dirs.h"
#include "experiments/runner/slurm_platform.h"

namespace invmw::experiment {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string ShellQuote(const std::string& s) {
  bool plain = !s.empty();
  for (char c : s)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-=:,+@%", c));
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + ShellQuote(a);
  return s;
}

std::string Hostname() {
  char b[256] = {0};
  gethostname(b, sizeof b - 1);
  return b;
}

bool Executable(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

// The program of the template as the launcher will exec it: a path as given (relative to the
// design file), a name found in invmw's bin directory, or a name on PATH.
std::string ResolveProgram(const Design& d, const std::string& program,
                           const std::string& bin_dir) {
  if (program.find('/') != std::string::npos) {
    fs::path p(program);
    if (p.is_relative()) p = fs::absolute(fs::path(d.file).parent_path() / p);
    if (!Executable(p.string()))
      throw std::runtime_error(d.file + ": command.program: " + p.string() +
                               " is not an executable file");
    return p.string();
  }
  if (!bin_dir.empty() && Executable(bin_dir + "/" + program)) return bin_dir + "/" + program;
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty() && Executable(dir + "/" + program)) return dir + "/" + program;
  throw std::runtime_error(d.file + ": command.program: '" + program + "' is neither in " +
                           bin_dir + " nor on PATH (is its target built?)");
}

// Runs a short helper command (an argument vector, no shell) and returns its output, standard
// error included; throws with that output on failure.
std::string Capture(const std::vector<std::string>& argv, const std::string& what) {
  SubprocessResult r = RunCapture(argv);
  if (!r.started) throw std::runtime_error(what + ": " + r.error);
  std::string out = r.output;
  if (!r.Succeeded()) {
    while (!out.empty() && out.back() == '\n') out.pop_back();
    // The command is invmw itself: its "invmw: error: " prefix is ours to give once.
    for (const char* prefix : {"invmw: error: ", "invmw: "})
      if (out.rfind(prefix, 0) == 0) {
        out.erase(0, std::strlen(prefix));
        break;
      }
    if (out.empty()) out = argv[0] + " failed (" + r.Describe() + ")";
    throw std::runtime_error(what + ": " + out);
  }
  return out;
}

std::vector<std::string> SplitWords(const std::string& s) {
  std::stringstream ss(s);
  std::vector<std::string> out;
  for (std::string w; ss >> w;) out.push_back(w);
  return out;
}

// The last lines the command printed, for the error column of a failed run: the program's and
// the launcher's own words first; rules ("-----") and invmw's aftermath ("invmw: no profile")
// only when nothing else is there.
std::string LogTail(const std::string& path, int lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff from = size > 2000 ? size - 2000 : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> all;
  std::stringstream ss(text);
  std::vector<std::string> said;
  for (std::string l; std::getline(ss, l);) {
    if (l.find_first_not_of(" \t\r") == std::string::npos) continue;
    all.push_back(l);
    if (l.find_first_not_of("- \t\r") != std::string::npos && l.rfind("invmw: ", 0) != 0 &&
        l.rfind("invmw ", 0) != 0)
      said.push_back(l);
  }
  if (!said.empty()) all.swap(said);
  std::string out;
  for (size_t i = all.size() > size_t(lines) ? all.size() - lines : 0; i < all.size(); ++i)
    out += (out.empty() ? "" : " | ") + all[i];
  return out;
}

struct Launch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};

class DesignRun {
 public:
  DesignRun(const Design& d, const RunnerOptions& o, FILE* out) : d_(d), o_(o), out_(out) {
    platform_ = o.platform.empty() ? d.platform : o.platform;
    runs_dir_ = o.runs_dir.empty() ? (fs::absolute(o.db_path).parent_path() / "runs").string()
                                   : fs::absolute(o.runs_dir).string();
    // Both become path components of every run directory.
    if (std::string why = CheckPathName(d.name); !why.empty())
      throw std::runtime_error("design '" + d.name + "': " + why);
    if (std::string why = CheckPathName(platform_); !why.empty())
      throw std::runtime_error("platform '" + platform_ + "': " + why);
    slurm_ = FindSlurmPlatform(platform_);
  }

  RunSummary Run() {
    RunSummary sum;
    std::vector<RunSlot> order = RunOrder(d_);
    if (o_.point >= 0) {
      if (o_.point >= d_.NumPoints())
        throw std::runtime_error("--point " + std::to_string(o_.point) + ": design '" + d_.name +
                                 "' has points 0.." + std::to_string(d_.NumPoints() - 1));
      if (o_.replication >= d_.replications)
        throw std::runtime_error("--replication " + std::to_string(o_.replication) + ": design '" +
                                 d_.name + "' has replications 0.." +
                                 std::to_string(d_.replications - 1));
      order = {{o_.point, o_.replication < 0 ? 0 : o_.replication}};
    }
    program_ = ResolveProgram(d_, d_.command.program, o_.bin_dir);
    if (platform_ != "local" && !slurm_)
      launcher_options_ = SplitWords(Capture(
          {o_.invmw, "platform", "exec", "--print-launcher", platform_}, "platform " + platform_));
    // A simulated cluster (platforms/simulated) runs the program's SMPI build under smpirun:
    // `platform exec` says so by naming smpirun as the platform's launcher.
    simulated_ = launcher_options_.size() == 1 && launcher_options_[0] == "smpirun";
    if (simulated_) {
      launcher_options_.clear();
      const std::string smpi = program_ + "-smpi";
      if (!Executable(smpi))
        throw std::runtime_error(d_.file + ": command.program: " + program_ +
                                 " has no SMPI build " + smpi + " for simulated platform " +
                                 platform_ + " (built with smpicc from Debian libsimgrid-dev: " +
                                 "the target " + fs::path(smpi).filename().string() + ")");
      program_ = smpi;
    }
    points_ = ExpandPoints(d_);

    if (o_.dry_run) {
      for (const RunSlot& s : order)
        std::fprintf(out_, "point %d rep %d: %s\n", s.point, s.replication,
                     Join(slurm_ ? Sbatch(s, RunDir(s)) : Command(s, RunDir(s)).argv).c_str());
      sum.planned = static_cast<int>(order.size());
      return sum;
    }

    results::ResultsDb db(o_.db_path);
    std::vector<RunSlot> todo;
    for (const RunSlot& s : order) {
      auto row = db.Find(d_.name, s.point, s.replication, platform_);
      bool same = row && row->factors == points_[s.point].FactorsJson(d_);
      if (row && row->status == "ok" && same && !o_.rerun) {
        ++sum.already_done;
        continue;
      }
      if (row && row->status == "ok" && !same)
        std::fprintf(out_, "point %d rep %d: factor values changed since it ran; running again\n",
                     s.point, s.replication);
      todo.push_back(s);
    }
    sum.planned = static_cast<int>(order.size());
    if (sum.already_done > 0)
      std::fprintf(out_, "%s on %s: %d of %d runs already done (--rerun repeats them)\n",
                   d_.name.c_str(), platform_.c_str(), sum.already_done, sum.planned);
    std::fflush(out_);

    // Terminating signals are taken synchronously (sigtimedwait) so that a Ctrl-C can never
    // land between the measurement and its row: it stops the running command, or waits for
    // the row being written.
    sigset_t mask, old;
    sigemptyset(&mask);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
    sigprocmask(SIG_BLOCK, &mask, &old);
    old_mask_ = old;
    if (slurm_) {
      try {
        RunBatch(todo, &db, &sum);
      } catch (...) {
        sigprocmask(SIG_SETMASK, &old, nullptr);
        throw;
      }
      sigprocmask(SIG_SETMASK, &old, nullptr);
      return sum;
    }
    Progress progress(out_, static_cast<int>(todo.size()), o_.tty);
    try {
      for (const RunSlot& s : todo) {
        if (int sig = PendingStop()) {
          sum.interrupted = true;
          sum.signal = sig;
          break;
        }
        progress.Start(Label(s));
        results::RunRecord rec;
        int sig = RunOne(s, &rec, &progress);
        if (sig) {
          progress.Finish("interrupted (signal " + std::to_string(sig) + "); nothing recorded");
          sum.interrupted = true;
          sum.signal = sig;
          break;
        }
        auto w0 = Clock::now();
        db.Write(rec);
        double write_s = Seconds(w0, Clock::now());
        std::string outcome;
        char b[160];
        if (rec.status == "ok") {
          ++sum.ok;
          std::snprintf(b, sizeof b, "ok, command %.3f s, analysis %.3f s, db write %.4f s",
                        rec.duration, analysis_s_, write_s);
          outcome = b;
        } else {
          ++sum.failed;
          outcome = "FAILED: " + rec.error;
        }
        progress.Finish(outcome);
      }
    } catch (...) {
      sigprocmask(SIG_SETMASK, &old, nullptr);
      throw;
    }
    progress.Done();
    sigprocmask(SIG_SETMASK, &old, nullptr);
    return sum;
  }

 private:
  std::string Label(const RunSlot& s) const {
    std::string l =
        "point " + std::to_string(s.point) + " rep " + std::to_string(s.replication) + " (";
    const Point& p = points_[s.point];
    for (size_t i = 0; i < d_.factors.size(); ++i)
      l += (i ? " " : "") + d_.factors[i].name + "=" + p.levels[i].Text();
    return l + ")";
  }

  static std::string RunName(const RunSlot& s) {
    return "p" + std::to_string(s.point) + "-r" + std::to_string(s.replication);
  }
  std::string RunDir(const RunSlot& s) const {
    return runs_dir_ + "/" + d_.name + "/" + platform_ + "/" + RunName(s);
  }

  Launch Command(const RunSlot& s, const std::string& run_dir) const {
    const Point& p = points_[s.point];
    auto values = PlaceholderValues(d_, p, s.replication, run_dir, o_.bin_dir);
    std::vector<std::string> launcher, args;
    for (const auto& l : d_.command.launcher) launcher.push_back(Substitute(l, values));
    for (const auto& a : d_.command.args) args.push_back(Substitute(a, values));
    std::string program = Substitute(program_, values);
    Launch L;
    for (const auto& [k, v] : d_.command.env) L.env[k] = Substitute(v, values);
    int ranks = static_cast<int>(p.derived.at("ranks"));
    std::vector<std::string>& a = L.argv;
    if (simulated_) {
      // No launcher and no preload: smpirun starts the ranks inside libsimgrid, and the run
      // directory's trace comes from SMPI's own (platforms/cli/simulated_exec.h).
      a = {o_.invmw, "platform", "exec", platform_, "--ranks", std::to_string(ranks),
           "--out",  run_dir,    "--",   program};
      a.insert(a.end(), args.begin(), args.end());
      return L;
    }
    if (platform_ != "local")
      a = {o_.invmw, "platform", "exec", platform_, "--ranks", std::to_string(ranks), "--"};
    a.insert(a.end(), {o_.invmw, "run", "--trace", "--out", run_dir, "--"});
    if (!launcher.empty()) {
      a.push_back(launcher[0]);
      if (platform_ != "local")
        a.insert(a.end(), launcher_options_.begin(), launcher_options_.end());
      a.insert(a.end(), launcher.begin() + 1, launcher.end());
    }
    if (platform_ != "local") a.insert(a.end(), {o_.invmw, "platform", "slot", "--"});
    a.push_back(program);
    a.insert(a.end(), args.begin(), args.end());
    return L;
  }

  // A stop signal that arrived between runs, or 0.
  int PendingStop() {
    sigset_t stop;
    sigemptyset(&stop);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop, s);
    struct timespec zero = {0, 0};
    int sig = sigtimedwait(&stop, nullptr, &zero);
    return sig > 0 ? sig : 0;
  }

  // Waits for the child until `limit` seconds have passed; returns true when it exited.
  bool WaitFor(pid_t pid, int* status, double limit) {
    auto until = Clock::now() +
                 std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    while (true) {
      if (waitpid(pid, status, WNOHANG) == pid) return true;
      double left = Seconds(Clock::now(), until);
      if (left <= 0) return false;
      struct timespec ts = {static_cast<time_t>(left),
                            static_cast<long>((left - static_cast<time_t>(left)) * 1e9)};
      sigtimedwait(&chld, nullptr, &ts);
    }
  }

  // Stops the command's process group: the signal first (the launcher and platform exec
  // clean up on it), SIGKILL after a grace period.
  void Stop(pid_t pid, int sig, int* status) {
    kill(-pid, sig);
    if (WaitFor(pid, status, 15)) return;
    kill(-pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
  }

  // Runs one slot and fills *rec. Returns the stop signal when interrupted (rec then unused).
  int RunOne(const RunSlot& s, results::RunRecord* rec, Progress* progress) {
    const Point& p = points_[s.point];
    // Fresh and marked as the runner's; a failed or interrupted earlier attempt's directory is
    // emptied only when the runner made it (run_dirs.h).
    std::string dir = MakeRunDir(runs_dir_, d_.name, platform_, RunName(s));
    Launch L = Command(s, dir);
    try {
      WriteFileAtomic(dir + "/command.txt", Join(L.argv) + "\n");
    } catch (const FileError& e) {
      // The command line is for the reader; the run itself does not need it.
      std::fprintf(stderr, "invmw experiment: warning: %s\n", e.what());
    }
    rec->design = d_.name;
    rec->point = s.point;
    rec->replication = s.replication;
    rec->platform = platform_;
    rec->factors = p.FactorsJson(d_);
    rec->host = Hostname();
    rec->trace_dir = dir;
    rec->start_time = results::IsoTimeNow();
    analysis_s_ = 0;

    std::string log = dir + "/runner.log";
    pid_t parent = getpid();
    auto t0 = Clock::now();
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      setpgid(0, 0);
      // The command dies with a runner killed by SIGKILL (the launcher then cleans up).
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(125);
      sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      int in = open("/dev/null", O_RDONLY);
      int o = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in >= 0) dup2(in, 0);
      if (o >= 0) {
        dup2(o, 1);
        dup2(o, 2);
      }
      if (chdir(dir.c_str()) != 0) _exit(126);
      for (const auto& [k, v] : L.env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> argv;
      for (auto& a : L.argv) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      std::fprintf(stderr, "invmw experiment: cannot run %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    setpgid(pid, pid);

    sigset_t waitset;
    sigemptyset(&waitset);
    for (int sg : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&waitset, sg);
    int status = 0, stop = 0;
    bool timed_out = false;
    auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(d_.timeout_s));
    while (true) {
      if (waitpid(pid, &status, WNOHANG) == pid) break;
      double left = Seconds(Clock::now(), deadline);
      if (left <= 0) {
        timed_out = true;
        Stop(pid, SIGTERM, &status);
        break;
      }
      double slice = left < 0.5 ? left : 0.5;
      struct timespec ts = {0, static_cast<long>(slice * 1e9)};
      int sig = sigtimedwait(&waitset, nullptr, &ts);
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        stop = sig;
        Stop(pid, sig, &status);
        break;
      }
      progress->Tick();
    }
    rec->duration = Seconds(t0, Clock::now());
    if (stop) return stop;

    rec->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (timed_out) {
      rec->status = "failed";
      rec->error = "timed out after " + FormatNumber(d_.timeout_s) + " s (design timeout)";
      return 0;
    }
    if (rec->exit_status != 0) {
      rec->status = "failed";
      rec->error = "exit status " + std::to_string(rec->exit_status);
      std::string tail = LogTail(log, 3);
      if (!tail.empty()) rec->error += ": " + tail;
      rec->error += " (log: " + log + ")";
      return 0;
    }
    auto a0 = Clock::now();
    try {
      auto values = ExtractResponses(dir, d_.responses);
      nlohmann::ordered_json j = nlohmann::ordered_json::object();
      for (const auto& r : d_.responses) j[r] = values.at(r);
      rec->responses = j.dump();
      rec->status = "ok";
    } catch (const std::exception& e) {
      rec->status = "failed";
      rec->error = std::string("responses: ") + e.what();
    }
    analysis_s_ = Seconds(a0, Clock::now());
    return 0;
  }

  // --- Slurm platforms (slurm_platform.h): every run one batch job --------------------------

  struct Job {
    RunSlot slot;
    std::string dir, id, state;
    bool adopted = false;
    bool timed_out = false;  // the runner cancelled it at the design's timeout
  };

  // squeue's view of a job: its state and, once it runs, the time it has run (%M).
  struct JobStatus {
    std::string state;
    double elapsed_s = -1;
  };

  // Marks a run whose job the runner cancelled at the design's timeout, for Harvest (also in a
  // later runner that collects the job).
  static constexpr const char* kTimedOutFile = "invmw-timed-out";

  static std::string ReadFirstLine(const std::string& path, std::string* second = nullptr) {
    std::ifstream in(path);
    std::string l;
    if (in) std::getline(in, l);
    if (second && in) std::getline(in, *second);
    return l;
  }

  std::string JobName(const RunSlot& s) const {
    return "invmw-" + d_.name + "-" + platform_ + "-" + RunName(s);
  }

  // What the job runs: invmw run -- srun PROGRAM ARGS (INVMW_OUTPUT_DIR comes from the batch
  // script), under `env` when the design sets variables.
  std::vector<std::string> JobCommand(const RunSlot& s, const std::string& run_dir) const {
    const Point& p = points_[s.point];
    auto values = PlaceholderValues(d_, p, s.replication, run_dir, o_.bin_dir);
    std::vector<std::string> a;
    if (!d_.command.env.empty()) {
      a.push_back("env");
      for (const auto& [k, v] : d_.command.env) a.push_back(k + "=" + Substitute(v, values));
    }
    a.insert(a.end(), {o_.invmw, "run", "--trace", "--", "srun"});
    a.insert(a.end(), slurm_->srun_options.begin(), slurm_->srun_options.end());
    a.push_back(Substitute(program_, values));
    for (const auto& x : d_.command.args) a.push_back(Substitute(x, values));
    return a;
  }

  std::vector<std::string> Sbatch(const RunSlot& s, const std::string& run_dir) const {
    int ranks = static_cast<int>(points_[s.point].derived.at("ranks"));
    // The design's timeout also bounds the job's --time (in whole minutes), so that Slurm ends
    // an overrunning job when no runner watches it; the runner cancels it at the exact timeout.
    SlurmPlatform p = *slurm_;
    p.time_limit = JobTimeLimit(p.time_limit, d_.timeout_s);
    return SbatchArgv(p, JobName(s), run_dir, ranks, run_dir + "/invmw-batch.sh",
                      JobCommand(s, run_dir));
  }

  // The job's state ("PENDING", "RUNNING", "COMPLETED", "TIMEOUT", ...), "" when slurmctld no
  // longer knows it. Throws when squeue itself fails otherwise (no controller).
  std::string JobState(const std::string& id) { return JobStatusOf(id).state; }

  static double Elapsed(const std::string& m) {
    long long s = SlurmTimeSeconds(m);
    return s < 0 ? -1 : double(s);
  }

  JobStatus JobStatusOf(const std::string& id) {
    SubprocessResult r = RunCapture({"squeue", "-h", "-t", "all", "-j", id, "-o", "%T %M"});
    if (!r.started) throw std::runtime_error("squeue: " + r.error);
    std::string out = r.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (!r.Succeeded()) {
      if (out.find("Invalid job id") != std::string::npos) return {};
      throw std::runtime_error("squeue -j " + id + " failed (" + r.Describe() + "): " + out);
    }
    JobStatus st;
    std::stringstream ss(out);
    std::string m;
    ss >> st.state >> m;
    st.elapsed_s = Elapsed(m);
    return st;
  }

  // The states of many jobs with one squeue call (a site's controller is polled once per
  // interval, not once per job); jobs it no longer knows are absent. Falls back to one call per
  // job when squeue refuses the list (a list naming a purged job may be refused as a whole).
  std::map<std::string, JobStatus> JobStates(const std::vector<std::string>& ids) {
    std::map<std::string, JobStatus> out;
    std::string list;
    for (const auto& id : ids) list += (list.empty() ? "" : ",") + id;
    SubprocessResult r = RunCapture({"squeue", "-h", "-t", "all", "-j", list, "-o", "%i %T %M"});
    if (r.Succeeded()) {
      std::stringstream ss(r.output);
      for (std::string id, state, m; ss >> id >> state >> m;) out[id] = {state, Elapsed(m)};
      return out;
    }
    for (const auto& id : ids)
      if (JobStatus st = JobStatusOf(id); !st.state.empty()) out[id] = st;
    return out;
  }

  // Cancels a job that has run longer than the design's timeout, as the local runner stops a
  // command then: scancel sends SIGTERM to every process of the job (SIGKILL after KillWait),
  // so the ranks save what they have, as at a time limit. The mark is written first, so that a
  // runner killed right after still records the run as timed out.
  void CancelTimedOut(Job* j, double elapsed) {
    WriteFileAtomic(j->dir + "/" + kTimedOutFile, FormatNumber(d_.timeout_s) + "\n", 0644);
    j->timed_out = true;
    SubprocessResult r = RunCapture({"scancel", j->id});
    std::fprintf(out_, "%s: job %s ran %s s, longer than the design timeout (%s s): %s\n",
                 Label(j->slot).c_str(), j->id.c_str(), FormatNumber(elapsed).c_str(),
                 FormatNumber(d_.timeout_s).c_str(),
                 r.Succeeded() ? "cancelled" : ("scancel failed: " + r.output).c_str());
    std::fflush(out_);
  }

  static bool Active(const std::string& state) {
    static const std::set<std::string> kEnded = {
        "COMPLETED", "CANCELLED", "FAILED",        "TIMEOUT", "NODE_FAIL",   "PREEMPTED",
        "BOOT_FAIL", "DEADLINE",  "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"};
    return !state.empty() && !kEnded.count(state);
  }

  // A job of this run that a killed runner submitted but had not yet recorded.
  std::string JobByName(const RunSlot& s, const std::string& dir) {
    SubprocessResult r = RunCapture({"squeue", "-h", "-t", "all", "-n", JobName(s), "-o", "%i %Z"});
    if (!r.Succeeded()) return "";
    std::stringstream ss(r.output);
    for (std::string id, wd; ss >> id >> wd;)
      if (wd == dir) return id;
    return "";
  }

  // The run's job: one that an earlier (killed or interrupted) runner submitted and that is
  // still queued or running, or ended without its row being written; else a new submission.
  Job SubmitOrAdopt(const RunSlot& s, results::ResultsDb* db) {
    Job j;
    j.slot = s;
    j.dir = RunDir(s);
    std::string id = ReadFirstLine(j.dir + "/slurm-job-id");
    if (id.empty()) id = JobByName(s, j.dir);
    auto row = db->Find(d_.name, s.point, s.replication, platform_);
    if (!id.empty() && !(row && row->job_id == id)) {
      std::string state = JobState(id);
      if (Active(state) || access((j.dir + "/invmw-exit-status").c_str(), F_OK) == 0) {
        j.id = id;
        j.state = state;
        j.adopted = true;
        j.timed_out = access((j.dir + "/" + kTimedOutFile).c_str(), F_OK) == 0;
        return j;
      }
    }
    j.dir = MakeRunDir(runs_dir_, d_.name, platform_, RunName(s));
    WriteFileAtomic(j.dir + "/invmw-batch.sh", kBatchScript, 0700);
    std::vector<std::string> argv = Sbatch(s, j.dir);
    WriteFileAtomic(j.dir + "/command.txt", Join(argv) + "\n", 0644);
    std::string out = Capture(argv, "sbatch for point " + std::to_string(s.point));
    j.id = out.substr(0, out.find_first_of(";\n"));
    if (j.id.empty() || j.id.find_first_not_of("0123456789_") != std::string::npos)
      throw std::runtime_error("sbatch printed no job id: " + out);
    WriteFileAtomic(j.dir + "/slurm-job-id", j.id + "\n", 0644);
    j.state = "PENDING";
    return j;
  }

  static std::string IsoTime(time_t t) {
    struct tm tmv;
    gmtime_r(&t, &tmv);
    char b[40];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S.000Z", &tmv);
    return b;
  }

  // The row of an ended job, from the files its batch script wrote.
  results::RunRecord Harvest(const Job& j) {
    const Point& p = points_[j.slot.point];
    results::RunRecord rec;
    rec.design = d_.name;
    rec.point = j.slot.point;
    rec.replication = j.slot.replication;
    rec.platform = platform_;
    rec.factors = p.FactorsJson(d_);
    rec.trace_dir = j.dir;
    rec.job_id = j.id;
    std::string batch_host;
    rec.node_list = ReadFirstLine(j.dir + "/invmw-nodes", &batch_host);
    rec.host = batch_host.empty() ? rec.node_list : batch_host;
    struct stat started, ended;
    bool have_start = stat((j.dir + "/invmw-nodes").c_str(), &started) == 0;
    bool have_end = stat((j.dir + "/invmw-exit-status").c_str(), &ended) == 0;
    rec.start_time = have_start ? IsoTime(started.st_mtime) : results::IsoTimeNow();
    if (have_start && have_end)
      rec.duration = double(ended.st_mtim.tv_sec - started.st_mtim.tv_sec) +
                     1e-9 * double(ended.st_mtim.tv_nsec - started.st_mtim.tv_nsec);
    const std::string log = j.dir + "/runner.log";
    const std::string job = "job " + j.id + (j.state.empty() ? "" : " (" + j.state + ")");
    if (j.timed_out || access((j.dir + "/" + kTimedOutFile).c_str(), F_OK) == 0) {
      // As the local runner records it; the exit status is the batch script's when it could
      // still write it, else unknown.
      rec.exit_status =
          have_end ? std::atoi(ReadFirstLine(j.dir + "/invmw-exit-status").c_str()) : -1;
      rec.status = "failed";
      rec.error = "timed out after " + FormatNumber(d_.timeout_s) + " s (design timeout); " + job +
                  " cancelled by the runner; what the ranks saved is in " + j.dir +
                  " (invmw profile / invmw trace recover)";
      return rec;
    }
    if (!have_end) {
      rec.exit_status = -1;  // unknown: the batch script was killed before it could say
      rec.status = "failed";
      rec.error = job +
                  " ended before its batch script finished (killed after KillWait, or "
                  "never started); what the ranks saved is in " +
                  j.dir + " (invmw profile / invmw trace recover)";
      return rec;
    }
    rec.exit_status = std::atoi(ReadFirstLine(j.dir + "/invmw-exit-status").c_str());
    if (rec.exit_status != 0) {
      rec.status = "failed";
      rec.error = job + ": exit status " + std::to_string(rec.exit_status);
      std::string tail = LogTail(log, 3);
      if (!tail.empty()) rec.error += ": " + tail;
      rec.error += " (log: " + log + ")";
      return rec;
    }
    try {
      auto values = ExtractResponses(j.dir, d_.responses);
      nlohmann::ordered_json js = nlohmann::ordered_json::object();
      for (const auto& r : d_.responses) js[r] = values.at(r);
      rec.responses = js.dump();
      rec.status = "ok";
    } catch (const std::exception& e) {
      rec.status = "failed";
      rec.error = job + ": responses: " + e.what();
    }
    return rec;
  }

  // Submits (or adopts) every run, then writes each row as its job ends. A stop signal ends
  // the wait, not the jobs: they stay in Slurm and the next `experiment run` collects them.
  void RunBatch(const std::vector<RunSlot>& todo, results::ResultsDb* db, RunSummary* sum) {
    std::vector<Job> jobs;
    int stop = 0;
    for (const RunSlot& s : todo) {
      if ((stop = PendingStop())) break;
      Job j = SubmitOrAdopt(s, db);
      std::fprintf(out_, "%s: %s job %s\n", Label(s).c_str(),
                   j.adopted ? "collecting earlier" : "submitted", j.id.c_str());
      std::fflush(out_);
      jobs.push_back(j);
    }
    sigset_t waitset;
    sigemptyset(&waitset);
    for (int sg : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&waitset, sg);
    while (!stop && !jobs.empty()) {
      std::vector<std::string> ids;
      for (const auto& j : jobs) ids.push_back(j.id);
      const auto states = JobStates(ids);
      for (auto it = jobs.begin(); it != jobs.end();) {
        auto st = states.find(it->id);
        it->state = st == states.end() ? "" : st->second.state;
        if (Active(it->state)) {
          if (it->state == "RUNNING" && !it->timed_out && st->second.elapsed_s > d_.timeout_s)
            CancelTimedOut(&*it, st->second.elapsed_s);
          ++it;
          continue;
        }
        results::RunRecord rec = Harvest(*it);
        db->Write(rec);
        if (rec.status == "ok")
          ++sum->ok;
        else
          ++sum->failed;
        std::fprintf(out_, "%s: job %s on %s: %s\n", Label(it->slot).c_str(), it->id.c_str(),
                     rec.node_list.c_str(),
                     rec.status == "ok" ? "ok" : ("FAILED: " + rec.error).c_str());
        std::fflush(out_);
        it = jobs.erase(it);
      }
      if (jobs.empty()) break;
      double w = slurm_->poll_interval_s;
      struct timespec ts = {static_cast<time_t>(w), static_cast<long>((w - time_t(w)) * 1e9)};
      int sig = sigtimedwait(&waitset, nullptr, &ts);
      if (sig > 0) stop = sig;
    }
    if (stop) {
      sum->interrupted = true;
      sum->signal = stop;
      std::string ids;
      for (const auto& j : jobs) ids += (ids.empty() ? "" : " ") + j.id;
      if (!jobs.empty())
        std::fprintf(out_,
                     "interrupted (signal %d): %zu job(s) stay in Slurm (%s); run the same "
                     "command again to collect them, or scancel them\n",
                     stop, jobs.size(), ids.c_str());
    }
  }

  const Design& d_;
  const RunnerOptions& o_;
  FILE* out_;
  std::string platform_, runs_dir_, program_;
  std::vector<std::string> launcher_options_;
  bool simulated_ = false;
  std::optional<SlurmPlatform> slurm_;
  std::vector<Point> points_;
  sigset_t old_mask_;
  double analysis_s_ = 0;
};

}  // namespace

RunSummary RunDesign(const Design& design, const RunnerOptions& options, FILE* out) {
  return DesignRun(design, options, out).Run();
}

}  // namespace invmw::experiment
