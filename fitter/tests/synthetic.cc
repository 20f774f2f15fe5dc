#include "fitter/tests/synthetic.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>

#include "results/results_db.h"

namespace invmw::fit::testing {

DataTable Synthesize(const Model& model, const std::vector<std::string>& factor_names,
                     const std::vector<std::vector<double>>& rows,
                     const std::map<std::string, double>& truth, double noise, uint64_t seed) {
  DataTable t;
  t.source = "synthetic";
  t.columns = factor_names;
  for (const auto& r : model.responses()) t.columns.push_back(r.column);
  std::vector<double> p(model.parameters().size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = truth.at(model.parameters()[i].name);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  for (const auto& row : rows) {
    std::vector<double> f(model.factors().size());
    for (size_t i = 0; i < f.size(); ++i) {
      const Factor& fac = model.factors()[i];
      auto it = std::find(factor_names.begin(), factor_names.end(), fac.name);
      f[i] = it == factor_names.end() ? fac.default_value : row[it - factor_names.begin()];
    }
    std::vector<double> out = row;
    for (const auto& r : model.responses())
      out.push_back(r.expr.Eval<double>(f.data(), p.data()) * (1 + noise * z(rng)));
    t.rows.push_back(out);
  }
  return t;
}

const std::map<std::string, double>& OpalTruth() {
  static const std::map<std::string, double> truth = {{"a1", 100},  {"b1", 20e-6}, {"a2", 5e-9},
                                                      {"a3", 5e-8}, {"a4", 1e-6},  {"b5", 2e-5}};
  return truth;
}

std::vector<std::vector<double>> OpalDesign() {
  std::vector<std::vector<double>> rows;
  for (double n : {500.0, 2000.0, 8000.0})
    for (double u : {1.0, 0.1})
      for (double nt : {100.0, 1e6})
        for (double p = 1; p <= 7; ++p) rows.push_back({10, p, u, n, nt, 0, 24});
  return rows;
}

const std::vector<std::string>& OpalFactors() {
  static const std::vector<std::string> names = {"s", "p", "u", "n", "nt", "g", "alpha"};
  return names;
}

void WriteOpalResultsDb(const std::string& path, const SyntheticDbRun& run) {
  Model m = Model::Load(ResolveModelPath("opal"));
  // The runner's own writer, so the tests read the schema the runner writes.
  results::ResultsDb db(path);
  const auto design = OpalDesign();
  for (int rep = 0; rep <= run.replications; ++rep) {
    bool failed = rep == run.replications;  // one extra, failed run per point
    DataTable d = Synthesize(m, OpalFactors(), design, run.truth, run.noise, run.seed * 1000 + rep);
    for (size_t i = 0; i < d.rows.size(); ++i) {
      nlohmann::json factors, responses;
      for (size_t k = 0; k < OpalFactors().size(); ++k) factors[OpalFactors()[k]] = d.rows[i][k];
      factors["mpi"] = "openmpi";
      for (size_t k = OpalFactors().size(); k < d.columns.size(); ++k)
        responses[d.columns[k]] = failed ? 1e9 : d.rows[i][k];
      responses["t_idle"] = 0.01 * responses["t_wall"].get<double>();
      results::RunRecord r;
      r.design = run.design;
      r.point = static_cast<int>(i);
      r.replication = rep;
      r.platform = run.platform;
      r.factors = factors.dump();
      r.responses = responses.dump();
      r.host = "synthetic";
      r.start_time = "2026-01-01T00:00:00Z";
      r.duration = responses["t_wall"].get<double>();
      r.exit_status = failed ? 1 : 0;
      r.status = failed ? "failed" : "ok";
      r.error = failed ? "exit status 1" : "";
      db.Write(r);
    }
  }
}

}  // namespace invmw::fit::testing
