// `invmw model search`: finds a performance model for measured responses (model_search.h),
// refits the selected one with the Ceres fitter for its intervals, and writes it as a model file
// that `fit`, `predict`, `plot` and `validate` take.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli/args.h"
#include "cli/paths.h"
#include "cli/verb.h"
#include "fitter/cli_common.h"
#include "fitter/file_io.h"
#include "fitter/fit.h"
#include "fitter/model_search.h"
#include "fitter/model_transfer.h"
#include "fitter/platform_table.h"
#include "fitter/results_db.h"
#include "results/results_db.h"

namespace invmw::fit::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

std::vector<std::string> SplitList(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string s;
    while (std::getline(ss, s, ','))
      if (!s.empty()) out.push_back(s);
  }
  return out;
}

// Factors by default: the numeric columns that are not responses and take at least two values.
std::vector<std::string> DefaultFactors(const DataTable& d, const std::vector<std::string>& resp) {
  std::set<std::string> skip(resp.begin(), resp.end());
  skip.insert(d.response_columns.begin(), d.response_columns.end());
  std::vector<std::string> out;
  for (size_t c = 0; c < d.columns.size(); ++c) {
    if (skip.count(d.columns[c])) continue;
    std::set<double> levels;
    for (const auto& row : d.rows)
      if (std::isfinite(row[c])) levels.insert(row[c]);
    if (levels.size() >= 2) out.push_back(d.columns[c]);
  }
  return out;
}

struct Refit {
  bool done = false, converged = false;
  FitResult fit;
  std::string error;
};

// The selected hypothesis as a one-response model, fitted by Ceres: intervals and LOO errors.
Refit RefitWithCeres(const SearchResult& s, const DataTable& d) {
  Refit r;
  try {
    Model m = Model::Parse(SearchModelToml({s}, "search", "refit"), "search of " + s.response);
    FitOptions o;
    r.fit = Fit(m, d, o);
    r.done = true;
    r.converged = r.fit.converged;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

int RunModelSearch(int argc, char** argv) {
  bool done = false, json = false, force = false;
  std::string data_path, design, db_path, run_platform, max_terms, out, name = "search";
  std::vector<std::string> responses, factor_items, compute_items;
  std::string out_table, table_name, machine_table, tables_dir;
  TransferSpec spec;
  Args args(
      "invmw model search (--design NAME [--db FILE] | --data FILE.csv) --response R... "
      "[options]",
      "Searches the performance model normal form c0 + sum c_k * prod x^i * log2(x)^j\n"
      "(i in -1, 0, 1/4, 1/3, 1/2, 2/3, 3/4, 1, ..., 3; j in 0, 1, 2) for each response:\n"
      "hypotheses are ranked by weighted linear least squares (relative errors), the number\n"
      "of terms is chosen by a lack-of-fit test against the replications and leave-one-\n"
      "design-point-out cross-validation, and the selected model is refitted with the Ceres\n"
      "fitter for its confidence intervals. Two or more factors: the best terms of each\n"
      "factor, then their sums and products (Extra-P's multi-parameter approach).\n"
      "Data: the CSV that `fit --data` reads (replications as repeated rows) or the runs of a\n"
      "design in the results database.");
  args.Option("--design", "NAME", &design, "the runs of this design from the results database")
      .Option("--db", "FILE", &db_path, results::kDbHelp)
      .Option("--platform", "NAME", &run_platform, "only runs on this run platform")
      .Option("--data", "FILE", &data_path, "CSV: header of factor and response column names")
      .Repeated("--response", "R", &responses, "response column to model (repeatable, or R1,R2)")
      .Repeated("--factors", "F1,F2", &factor_items,
                "factors to search over (default: every other column with two or more values)")
      .Option("--max-terms", "N", &max_terms,
              "most terms in a hypothesis, the constant included (default 3, 2..6)")
      .Option("--out", "FILE", &out, "write the selected models as a model file")
      .Flag("--force", &force, "overwrite an existing --out (or --out-table) file")
      .Repeated("--compute", "R", &compute_items,
                "computation responses: their terms scale with --scale-kernel on other machines "
                "(default with --out-table: t_par_comp, t_seq_comp, t_comp among the responses)")
      .Option("--scale-kernel", "NAME", &spec.scale_kernel,
              "platform parameter computation scales with (default a3)")
      .Option("--comm", "R", &spec.comm,
              "communication response, modelled as messages*b1 + bytes/(a1*1e6) (needs --bytes, "
              "--messages)")
      .Option("--bytes", "COL", &spec.bytes, "column of bytes per run (with --comm)")
      .Option("--messages", "COL", &spec.messages, "column of messages per run (with --comm)")
      .Option("--out-table", "FILE", &out_table,
              "also write the platform table of the measured machine (needs --out)")
      .Option("--table-name", "NAME", &table_name,
              "name in the --out-table file (default: its stem)")
      .Option("--machine-table", "TABLE", &machine_table,
              "platform table of the machine the data came from (e.g. `invmw platform probe`): "
              "its --scale-kernel parameter, measures and kernels go into --out-table")
      .Option("--tables", "DIR", &tables_dir, "directory of platform tables (--machine-table)")
      .Option("--name", "NAME", &name, "model name in the --out file (default search)")
      .Flag("--json", &json, "machine-readable output")
      .Epilog(
          "Examples:\n  invmw model search --data runs.csv --response t --factors p,n --out "
          "m.toml\n"
          "  invmw fit --model m.toml --data runs.csv    # the written model is a model file\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  responses = SplitList(responses);
  if (responses.empty()) return Fail("model search: --response is required");
  if (data_path.empty() == design.empty())
    return Fail("model search: give either --design NAME (results database) or --data FILE.csv");
  if (design.empty() && (!db_path.empty() || !run_platform.empty()))
    return Fail("model search: --db and --platform select runs of a --design; not for --data");
  SearchOptions so;
  if (!max_terms.empty()) {
    char* end = nullptr;
    long v = std::strtol(max_terms.c_str(), &end, 10);
    if (*end != '\0' || v < 2 || v > 6)
      return Fail("model search: --max-terms '" + max_terms + "': expected an integer 2..6");
    so.max_terms = static_cast<int>(v);
  }
  if (!out.empty() && !force && access(out.c_str(), F_OK) == 0)
    return Fail("model search: " + out + " exists (use --force to overwrite it)");
  spec.compute = SplitList(compute_items);
  const bool transfer = !spec.compute.empty() || !spec.comm.empty() || !out_table.empty();
  if (!out_table.empty() && out.empty())
    return Fail("model search: --out-table needs --out (the table holds the model's parameters)");
  if (!out_table.empty() && !force && access(out_table.c_str(), F_OK) == 0)
    return Fail("model search: " + out_table + " exists (use --force to overwrite it)");
  if (!machine_table.empty() && out_table.empty())
    return Fail("model search: --machine-table is copied into --out-table; give --out-table");
  if (spec.comm.empty() != (spec.bytes.empty() || spec.messages.empty()) ||
      spec.bytes.empty() != spec.messages.empty())
    return Fail("model search: --comm, --bytes and --messages go together");
  if (!spec.comm.empty() &&
      std::find(responses.begin(), responses.end(), spec.comm) == responses.end())
    return Fail("model search: --comm '" + spec.comm + "' is not one of the --response names");
  if (transfer && compute_items.empty())
    for (const auto& r : responses)
      if (r == "t_par_comp" || r == "t_seq_comp" || r == "t_comp") spec.compute.push_back(r);
  if (table_name.empty() && !out_table.empty()) {
    table_name = out_table.substr(out_table.find_last_of('/') + 1);
    if (table_name.size() > 5 && table_name.substr(table_name.size() - 5) == ".toml")
      table_name.resize(table_name.size() - 5);
  }
  try {
    DataTable d = design.empty()
                      ? ReadCsv(data_path)
                      : LoadResults(results::DbPath(db_path, invmw::cli::ExecutableDir()),
                                    {design, run_platform});
    std::vector<std::string> factors = SplitList(factor_items);
    if (factors.empty()) factors = DefaultFactors(d, responses);
    if (factors.empty())
      return Fail("model search: " + d.source +
                  " has no column with two or more values besides the responses (--factors)");
    std::vector<SearchResult> results;
    std::vector<Refit> refits;
    std::vector<std::string> searched = responses;
    if (!spec.comm.empty()) {  // the profile columns, searched like the responses
      searched.push_back(spec.bytes);
      searched.push_back(spec.messages);
    }
    std::unique_ptr<PlatformTable> machine;
    if (!machine_table.empty())
      machine = std::make_unique<PlatformTable>(
          LoadPlatformTable(ResolvePlatformTable(machine_table, tables_dir)));
    for (const auto& r : searched) {
      results.push_back(SearchModel(d, r, factors, so));
      refits.push_back(RefitWithCeres(results.back(), d));
    }
    // The file carries the Ceres estimates when the refit converged (the same model, fitted by
    // the fitter that will read the file).
    std::vector<SearchResult> written = results;
    for (size_t i = 0; i < written.size(); ++i)
      if (refits[i].converged)
        for (size_t k = 0; k < written[i].selected.coef.size(); ++k)
          written[i].selected.coef[k] = refits[i].fit.params[k].value;
    std::unique_ptr<CommRates> rates;
    if (!spec.comm.empty())
      rates = std::make_unique<CommRates>(FitCommRates(d, spec.comm, spec.bytes, spec.messages));
    nlohmann::json j;
    j["data"] = d.source;
    if (transfer) {
      j["transfer"] = {{"compute", spec.compute}, {"scale_kernel", spec.scale_kernel}};
      if (rates)
        j["transfer"]["comm"] = {{"response", spec.comm},
                                 {"bytes", spec.bytes},
                                 {"messages", spec.messages},
                                 {"a1", rates->a1},
                                 {"a1_std_error", Num(rates->a1_std_error)},
                                 {"b1", rates->b1},
                                 {"b1_std_error", Num(rates->b1_std_error)},
                                 {"rows", rates->rows},
                                 {"rel_rms", rates->rel_rms},
                                 {"note", rates->note}};
    }
    j["factors"] = factors;
    j["max_terms"] = so.max_terms;
    for (size_t i = 0; i < results.size(); ++i) {
      const SearchResult& s = results[i];
      const Refit& rf = refits[i];
      auto terms = [&](const Hypothesis& h) {
        nlohmann::json t = nlohmann::json::array();
        for (const auto& term : h.terms) t.push_back(TermText(term, s.factors));
        return t;
      };
      nlohmann::json jr;
      jr["response"] = s.response;
      jr["rows"] = s.rows;
      jr["points"] = s.points;
      jr["skipped_rows"] = s.skipped_rows;
      jr["hypotheses"] = s.hypotheses;
      jr["max_terms"] = s.max_terms;
      nlohmann::json sel;
      sel["formula"] = FormulaText(s.selected, s.factors);
      sel["terms"] = terms(s.selected);
      sel["cv_error"] = Num(s.selected.cv_rms);
      sel["train_error"] = Num(s.selected.train_rms);
      sel["lack_of_fit_p"] = Num(s.selected.lack_of_fit_p);
      sel["refit_converged"] = rf.converged;
      if (!rf.error.empty()) sel["refit_error"] = rf.error;
      for (size_t k = 0; k < s.selected.terms.size(); ++k) {
        nlohmann::json c = {{"name", CoefficientName(results, i, k)},
                            {"term", TermText(s.selected.terms[k], s.factors)},
                            {"lls_value", s.selected.coef[k]},
                            {"lls_std_error", Num(s.selected.std_error[k])}};
        if (rf.done) {
          const ParamEstimate& p = rf.fit.params[k];
          c["value"] = p.value;
          c["std_error"] = Num(p.std_error);
          c["ci_low"] = Num(p.ci_low);
          c["ci_high"] = Num(p.ci_high);
        }
        sel["coefficients"].push_back(c);
      }
      if (rf.done && !rf.fit.responses.empty()) {
        sel["refit_mape"] = Num(rf.fit.responses[0].mape);
        sel["refit_loo_mape"] =
            rf.fit.responses[0].cv_mape < 0 ? nlohmann::json() : Num(rf.fit.responses[0].cv_mape);
      }
      jr["selected"] = sel;
      jr["runners_up"] = nlohmann::json::array();
      for (const auto& h : s.runners_up)
        jr["runners_up"].push_back({{"formula", FormulaText(h, s.factors)},
                                    {"terms", terms(h)},
                                    {"cv_error", Num(h.cv_rms)},
                                    {"train_error", Num(h.train_rms)},
                                    {"lack_of_fit_p", Num(h.lack_of_fit_p)}});
      jr["warnings"] = s.warnings;
      j["responses"].push_back(jr);
    }
    if (!out.empty()) {
      std::string desc = "found by invmw model search in " + d.source;
      std::string text = transfer ? TransferModelToml(written, spec, rates.get(), name, desc)
                                  : SearchModelToml(written, name, desc);
      Model::Parse(text, out);  // what is written must load (throws ModelError otherwise)
      std::string table_text;
      if (!out_table.empty()) {
        table_text = FormatPlatformTable(
            MeasuredTable(written, spec, rates.get(), machine.get(), table_name, d.source));
        ParsePlatformTable(table_text, out_table);  // it must load too
      }
      WriteFileAtomic(out, text);
      j["model_file"] = out;
      if (!out_table.empty()) {
        WriteFileAtomic(out_table, table_text);
        j["table_file"] = out_table;
      }
    }
    if (json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf(
          "model search over %s in %s (at most %d terms, the constant included)\n",
          [&] {
            std::string s;
            for (const auto& f : factors) s += (s.empty() ? "" : ", ") + f;
            return s;
          }()
              .c_str(),
          d.source.c_str(), so.max_terms);
      for (size_t i = 0; i < results.size(); ++i) {
        const SearchResult& s = results[i];
        const Refit& rf = refits[i];
        std::printf("\nresponse %s: %d rows at %d design points, %ld hypotheses\n",
                    s.response.c_str(), s.rows, s.points, s.hypotheses);
        std::printf("selected: %s\n", FormulaText(s.selected, s.factors).c_str());
        std::printf(
            "  cross-validated error %s%%, training error %s%% (relative RMS), lack of "
            "fit p = %s\n",
            Fmt(100 * s.selected.cv_rms, 0).c_str(), Fmt(100 * s.selected.train_rms, 0).c_str(),
            Fmt(s.selected.lack_of_fit_p, 0).c_str());
        if (rf.done) {
          std::printf("  %-10s %-26s %11s %11s %11s %11s\n", "COEF", "TERM", "ESTIMATE",
                      "STD.ERROR", "CI.LOW", "CI.HIGH");
          for (size_t k = 0; k < s.selected.terms.size(); ++k) {
            const ParamEstimate& p = rf.fit.params[k];
            std::printf("  %-10s %-26s %s %s %s %s\n", CoefficientName(results, i, k).c_str(),
                        TermText(s.selected.terms[k], s.factors).c_str(), Fmt(p.value).c_str(),
                        Fmt(p.std_error).c_str(), Fmt(p.ci_low).c_str(), Fmt(p.ci_high).c_str());
          }
          std::printf("  (Ceres refit %s; 95%% intervals; MAPE %s%%, leave-one-out MAPE %s%%)\n",
                      rf.converged ? "converged" : "did NOT converge",
                      Fmt(rf.fit.responses.empty() ? NAN : rf.fit.responses[0].mape, 0).c_str(),
                      Fmt(rf.fit.responses.empty() || rf.fit.responses[0].cv_mape < 0
                              ? NAN
                              : rf.fit.responses[0].cv_mape,
                          0)
                          .c_str());
        } else {
          std::printf("  (Ceres refit failed: %s)\n", rf.error.c_str());
        }
        if (!s.runners_up.empty()) std::printf("runners-up (by cross-validated error):\n");
        for (const auto& h : s.runners_up)
          std::printf("  %s%%  %s\n", Fmt(100 * h.cv_rms, 8).c_str(),
                      FormulaText(h, s.factors).c_str());
        for (const auto& w : s.warnings) std::fprintf(stderr, "invmw: warning: %s\n", w.c_str());
      }
      if (rates)
        std::printf(
            "\nmeasured machine: %s = %s * b1 + %s / (a1 * 1e6): a1 = %s MB/s, b1 = %s s "
            "(%d runs, relative RMS error %s%%)%s%s\n",
            spec.comm.c_str(), spec.messages.c_str(), spec.bytes.c_str(), Fmt(rates->a1, 0).c_str(),
            Fmt(rates->b1, 0).c_str(), rates->rows, Fmt(100 * rates->rel_rms, 0).c_str(),
            rates->note.empty() ? "" : "; ", rates->note.c_str());
      if (!out.empty()) std::printf("\nwrote model file %s\n", out.c_str());
      if (!out_table.empty())
        std::printf(
            "wrote platform table %s (predict here: --platform %s; elsewhere: "
            "--platform OTHER --reference %s)\n",
            out_table.c_str(), out_table.c_str(), out_table.c_str());
    }
    return 0;
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

}  // namespace

INVMW_VERB("model search", "find a performance model for measured responses", RunModelSearch);

}  // namespace invmw::fit::cli
