// `invmw profile DIR`: print a run's profile, building it first from the per-rank raw data when
// the run ended before MPI_Finalize could.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "cli/args.h"
#include "cli/verb.h"
#include "callsites/callsites.h"
#include "callsites/trace_names.h"
#include "recording/profile_report.h"

namespace invmw::cli {
namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

int ProfileCmd(int argc, char** argv) {
  bool json_out = false, merge = false;
  std::vector<std::string> pos;
  Args args("invmw profile [--json] [--merge] DIR",
            "Prints the profile of the run whose experiment directory is DIR (profile.txt, or\n"
            "profile.json with --json). When DIR has no profile yet because the job ended\n"
            "without MPI_Finalize, the profile is first built from the per-rank data under\n"
            "DIR/raw/ and marked incomplete. --merge rebuilds it from raw/ even if it exists.\n"
            "Call sites the ranks recorded (DIR/callsites/) are resolved to file:line and\n"
            "added as profile.json's \"callsites\" and profile.txt's call-site tables.");
  args.Flag("--json", &json_out, "print profile.json instead of the text report")
      .Flag("--merge", &merge, "rebuild the profile from DIR/raw/ first")
      .Positional("DIR", &pos, 1, 1);
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  const std::string dir = pos[0];
  if (!Exists(dir)) return Fail(dir + ": no such directory");
  if (merge || !Exists(dir + "/profile.json")) {
    std::string err;
    int n = 0;
    std::vector<std::string> problems;
    const bool ok = profile::MergeDirectory(dir, &err, &n, &problems);
    for (const auto& p : problems) std::fprintf(stderr, "invmw: warning: %s\n", p.c_str());
    if (!ok) return Fail(err);
    std::fprintf(stderr, "invmw: built the profile of %s from %d rank dump(s)\n", dir.c_str(), n);
  }
  // A run of more ranks than INVMW_PROFILE_INLINE_RANKS: its per-rank tables join the profile.
  {
    std::string err;
    bool assembled = false;
    if (!profile::AssembleRankFiles(dir, &assembled, &err))
      std::fprintf(stderr, "invmw: warning: per-rank tables not added: %s\n", err.c_str());
    else if (assembled)
      std::fprintf(stderr, "invmw: added the per-rank tables of %s/raw/profile-*.json\n",
                   dir.c_str());
  }
  // Call sites are resolved here, after the run, where it costs the application nothing.
  {
    std::string err;
    bool attached = false;
    std::vector<std::string> problems;
    const bool ok = callsites::AttachToProfile(dir, &attached, &err, &problems, merge);
    for (const auto& p : problems) std::fprintf(stderr, "invmw: warning: %s\n", p.c_str());
    if (!ok) std::fprintf(stderr, "invmw: warning: call sites not added: %s\n", err.c_str());
    // And the trace's calling contexts (its global definitions only, not its events).
    std::vector<std::string> trace_problems;
    callsites::NameTraceCallSites(dir, "traces", &trace_problems);
    for (const auto& p : trace_problems) std::fprintf(stderr, "invmw: warning: %s\n", p.c_str());
  }
  std::ifstream in(dir + (json_out ? "/profile.json" : "/profile.txt"));
  if (!in) return Fail(dir + ": cannot read the profile");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fwrite(s.data(), 1, s.size(), stdout);
  return 0;
}

}  // namespace

INVMW_VERB("profile", "print (or build after a crash) a run's profile", ProfileCmd);

}  // namespace invmw::cli
