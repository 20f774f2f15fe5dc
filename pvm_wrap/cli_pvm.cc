// `invmw pvm merge DIR`: builds the profile (and trace) of a PVM run from its per-task data.
// `invmw run` does this itself after a PVM program; this verb serves plain LD_PRELOAD runs.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/verb.h"
#include "common/config.h"
#include "pvm_wrap/merge.h"

namespace invmw::cli {
namespace {

int PvmMerge(int argc, char** argv) {
  std::vector<std::string> dirs;
  std::string wait;
  bool quiet = false;
  Args args("invmw pvm merge [options] DIR",
            "Merges the per-task data a PVM run left in DIR/raw/pvm/ (written by\n"
            "libinvmw-pvm.so in every task) into DIR/profile.txt, DIR/profile.json and, when\n"
            "the tasks traced, DIR/traces.otf2. Task ids become ranks: the first task is rank\n"
            "0, then tasks in spawn order (breadth first); profile.json lists the mapping\n"
            "under \"pvm\". Tasks that have not finished writing are waited for.");
  args.Positional("DIR", &dirs, 1, 1)
      .Option("--wait", "DURATION", &wait,
              "how long to wait for tasks still ending (default INVMW_PVM_MERGE_WAIT, 10s)")
      .Flag("--quiet", &quiet, "print nothing but errors")
      .Epilog(
          "example:\n  LD_PRELOAD=build/lib/libinvmw-pvm.so INVMW_OUTPUT_DIR=out ./master\n"
          "  invmw pvm merge out");
  bool done;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  pvm::MergeOptions opt;
  opt.wait_s = config::Load().PVM_MERGE_WAIT;
  if (!wait.empty() && !config::ParseDuration(wait, &opt.wait_s))
    return Fail("--wait " + wait + ": expected a duration such as 5s or 500ms");
  pvm::MergeResult r = pvm::Merge(dirs[0], opt);
  for (const auto& p : r.problems) std::fprintf(stderr, "invmw: %s\n", p.c_str());
  for (const auto& s : r.static_programs)
    std::fprintf(stderr, "invmw: %s has PVM linked in statically; its calls were not recorded\n",
                 s.c_str());
  if (!r.ok) return Fail("no profile built from " + dirs[0]);
  if (!quiet) {
    std::printf("%zu PVM task(s) merged into %s/profile.txt\n", r.tasks.size(), dirs[0].c_str());
    for (const auto& t : r.tasks)
      std::printf("  rank %d  t%x  %s%s\n", t.rank, unsigned(t.tid), t.program.c_str(),
                  t.has_dump ? "" : "  (no data)");
    if (!r.archive.empty()) std::printf("trace: %s\n", r.archive.c_str());
  }
  return 0;
}

}  // namespace

INVMW_VERB("pvm merge", "build the profile and trace of a PVM run from its per-task data",
           PvmMerge);

}  // namespace invmw::cli
