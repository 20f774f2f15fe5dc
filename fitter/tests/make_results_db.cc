// fit_make_results_db OUT.db: a results database (contract D) of synthetic Opal runs with known
// truth, for the command-line tests of `invmw fit --design` and `invmw plot`.
//   design "opal-84", platform "emu-a": the truth of OpalTruth() (a1 = 100 MB/s, ...)
//   design "opal-84", platform "local": the same but a1 = 1000 MB/s
// each with 2 successful replications per point and one failed run per point.
#include <cstdio>
#include <exception>

#include "fitter/tests/synthetic.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fit_make_results_db OUT.db\n");
    return 2;
  }
  try {
    using invmw::fit::testing::SyntheticDbRun;
    SyntheticDbRun a;
    a.design = "opal-84";
    a.platform = "emu-a";
    a.truth = invmw::fit::testing::OpalTruth();
    invmw::fit::testing::WriteOpalResultsDb(argv[1], a);
    SyntheticDbRun b = a;
    b.platform = "local";
    b.truth["a1"] = 1000;
    b.seed = 2;
    invmw::fit::testing::WriteOpalResultsDb(argv[1], b);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fit_make_results_db: %s\n", e.what());
    return 1;
  }
  return 0;
}
