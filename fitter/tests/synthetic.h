// Synthetic measurements with known truth, for the fitter's tests and the plot/database tests:
// a model evaluated at design points with multiplicative Gaussian noise, the paper's 84-point
// Opal design, and a results database (contract D schema) filled with such runs.
//
// Why shared: the statistical tests (coverage of confidence intervals), the database loader test
// and the command-line tests must all generate data the same way, so a recovered parameter can
// be compared with the truth that produced it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fitter/data_table.h"
#include "fitter/model.h"

namespace invmw::fit::testing {

// Evaluates every response of `model` at the factor rows (columns `factor_names`; factors the
// rows lack take the model's default) with the true parameters, times (1 + noise * N(0,1)).
// Columns: the factors, then each response's column.
DataTable Synthesize(const Model& model, const std::vector<std::string>& factor_names,
                     const std::vector<std::vector<double>>& rows,
                     const std::map<std::string, double>& truth, double noise, uint64_t seed);

// Parameters used as the truth of the Opal tests.
const std::map<std::string, double>& OpalTruth();
// The paper's design: 3 sizes x 2 update settings x 2 cut-offs x 7 server counts = 84 points,
// columns OpalFactors().
std::vector<std::vector<double>> OpalDesign();
const std::vector<std::string>& OpalFactors();

struct SyntheticDbRun {
  std::string design, platform;
  int replications = 2;
  double noise = 0.02;
  uint64_t seed = 1;
  std::map<std::string, double> truth;
};

// Creates (or extends) a results database at `path` with the contract D schema and one 'ok'
// run per design point and replication of the Opal design, responses t_wall (from the model's
// total), t_par_comp, t_seq_comp, t_comm, t_sync and t_idle (1% of t_wall), plus one 'failed'
// run per design point that readers must ignore. Factors also carry "mpi": "openmpi" (text).
// Writes through results::ResultsDb; throws its DbError (a std::runtime_error) on SQLite errors.
void WriteOpalResultsDb(const std::string& path, const SyntheticDbRun& run);

}  // namespace invmw::fit::testing
