#include "launch/finish.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "common/config.h"
#include "otf2_writer/converter.h"
#include "callsites/callsites.h"
#include "callsites/trace_names.h"
#include "recording/profile_report.h"
#include "pvm_wrap/merge.h"

namespace invmw::launch {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A PVM run: every task wrote its own data; merge it now that the program has ended.
void MergePvmTasks(const std::string& out, bool quiet) {
  if (!pvm::HasPvmData(out)) return;
  pvm::MergeOptions mo;
  mo.wait_s = config::Load().PVM_MERGE_WAIT;
  pvm::MergeResult r = pvm::Merge(out, mo);
  for (const auto& p : r.problems) std::fprintf(stderr, "invmw: pvm: %s\n", p.c_str());
  for (const auto& s : r.static_programs)
    std::fprintf(stderr, "invmw: pvm: %s has PVM linked in statically: not recorded\n", s.c_str());
  if (r.ok && !quiet) std::fprintf(stderr, "invmw: merged %zu PVM task(s)\n", r.tasks.size());
}

// Why the job left no profile, from its wait status ("" when it exited with status 0).
std::string JobEnding(int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    return " (the job exited with status " + std::to_string(WEXITSTATUS(status)) + ")";
  if (WIFSIGNALED(status))
    return " (the job was killed by signal " + std::to_string(WTERMSIG(status)) + ")";
  return "";
}

// The profile: the one the ranks (or the PVM merge) wrote, else one merged from the per-rank
// data, marked incomplete. Returns whether there is one now.
bool EnsureProfile(const FinishOptions& o, int status) {
  if (Exists(o.out + "/profile.json")) return true;
  if (!o.profile_enabled) {
    if (!o.quiet) std::fprintf(stderr, "invmw: no profile (INVMW_PROFILE_ENABLE=0)\n");
    return false;
  }
  std::string err;
  int n = 0;
  std::vector<std::string> problems;
  const bool merged = profile::MergeDirectory(o.out, &err, &n, &problems);
  if (!o.quiet)
    for (const auto& p : problems) std::fprintf(stderr, "invmw: warning: %s\n", p.c_str());
  if (merged) {
    if (!o.quiet)
      std::fprintf(stderr,
                   "invmw: the job ended before MPI_Finalize; built an incomplete profile from "
                   "%d rank(s)\n",
                   n);
    return true;
  }
  if (!o.quiet)
    std::fprintf(stderr, "invmw: no profile: %s%s\n", err.c_str(), JobEnding(status).c_str());
  return false;
}

// A traced job whose archive rank 0 did not build (the job died first, or the conversion
// failed: the converter renames a complete archive into place, so an anchor older than this
// run's defs is a previous run's): build it from what the ranks flushed (the same converter,
// the crash path).
void RecoverTrace(const FinishOptions& o) {
  const std::string& out = o.out;
  struct stat defs_st;
  const bool traced = stat((out + "/raw/defs-000000.jsonl").c_str(), &defs_st) == 0;
  if (!traced) return;
  const auto written_by_this_run = [&] {
    struct stat a;
    return stat((out + "/traces.otf2").c_str(), &a) == 0 && S_ISREG(a.st_mode) && a.st_size > 0 &&
           (a.st_mtim.tv_sec > defs_st.st_mtim.tv_sec ||
            (a.st_mtim.tv_sec == defs_st.st_mtim.tv_sec &&
             a.st_mtim.tv_nsec >= defs_st.st_mtim.tv_nsec));
  };
  if (!written_by_this_run()) {
    try {
      otf2::ConvertResult r = otf2::ConvertToOtf2(out);
      if (!o.quiet) {
        for (const auto& p : r.problems) std::fprintf(stderr, "invmw: trace: %s\n", p.c_str());
        std::fprintf(stderr, "invmw: recovered the trace of the failed job: %s (%llu events%s)\n",
                     r.archive.c_str(), (unsigned long long)r.events_out,
                     r.partial ? ", partial" : "");
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "invmw: error: the trace was not written: %s (the raw trace stays in %s/raw; "
                   "retry with `invmw trace recover %s`)\n",
                   e.what(), out.c_str(), out.c_str());
    }
  } else if (!o.quiet && (o.ranks_quiet || pvm::HasPvmData(out))) {
    // Rank 0 of an MPI job announced the archive it wrote, unless the ranks were told to be
    // quiet; a PVM run's merge did not.
    std::fprintf(stderr, "invmw: trace: %s/traces.otf2\n", out.c_str());
  }
}

// A run of more ranks than INVMW_PROFILE_INLINE_RANKS left its per-rank tables in files (the
// tree merge at MPI_Finalize): they go into profile.json now that the job is over.
void AddRankFiles(const FinishOptions& o) {
  std::string err;
  bool assembled = false;
  if (!profile::AssembleRankFiles(o.out, &assembled, &err))
    std::fprintf(stderr, "invmw: warning: per-rank tables not added to the profile: %s\n",
                 err.c_str());
}

// The call sites the ranks recorded, resolved now that the job is over (costs it nothing).
void AddCallSites(const FinishOptions& o) {
  std::string err;
  bool attached = false;
  std::vector<std::string> problems;
  const bool ok = callsites::AttachToProfile(o.out, &attached, &err, &problems);
  for (const auto& p : problems) std::fprintf(stderr, "invmw: warning: %s\n", p.c_str());
  if (!ok)
    std::fprintf(stderr, "invmw: warning: call sites not added to the profile: %s\n", err.c_str());
  else if (attached && !o.quiet)
    std::fprintf(stderr, "invmw: call sites resolved into %s/profile.txt\n", o.out.c_str());
}

// The trace's calling contexts, named by object+offset by the ranks, get file:line names: only
// the archive's global definitions are rewritten (callsites/trace_names.h).
void NameTraceContexts(const FinishOptions& o) {
  std::vector<std::string> problems;
  const callsites::TraceNames n = callsites::NameTraceCallSites(o.out, "traces", &problems);
  for (const auto& p : problems) std::fprintf(stderr, "invmw: warning: %s\n", p.c_str());
  if (n.ok && n.renamed && !o.quiet)
    std::fprintf(stderr, "invmw: trace: %zu calling contexts named (%.3f s)\n", n.renamed,
                 n.seconds);
}

}  // namespace

void FinishRun(const FinishOptions& o, int status) {
  const bool ranks_wrote_profile = Exists(o.out + "/profile.json");
  MergePvmTasks(o.out, o.quiet);
  const bool has_profile = EnsureProfile(o, status);
  // (A profile the ranks wrote was announced by rank 0.)
  if (has_profile && !ranks_wrote_profile && !o.quiet)
    std::fprintf(stderr, "invmw: profile: %s/profile.txt (and profile.json)\n", o.out.c_str());
  if (has_profile) AddRankFiles(o);
  if (has_profile) AddCallSites(o);
  RecoverTrace(o);
  NameTraceContexts(o);
}

int PassOnStatus(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace invmw::launch
