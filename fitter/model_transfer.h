// Searched models that move to other machines (issue 21 item 2), and the platform table of the
// machine the data came from (`invmw model search --out-table`).
//
// Why: a searched model of one machine's times is worth little elsewhere unless its terms say
// which platform parameter they depend on. Computation coefficients are platform values that
// scale with a compute parameter of the tables (`transfer = "compute"`, `scale_kernel = "a3"`);
// communication is rewritten as messages(f) * b1 + bytes(f) / (a1 * 1e6), where messages(f) and
// bytes(f) are searched functions of the factors (they do not depend on the machine) and a1 (MB/s)
// and b1 (s) are the tables' rate and latency, fitted here for the measured machine. Everything
// else keeps its searched coefficients. `invmw predict --platform measured.toml` reproduces the
// measured machine; `--platform other --reference measured.toml` transfers like the Opal model.
//
// Contract: the functions throw SearchError naming the response or column for inputs that cannot
// be used (no rows with both bytes or messages and the time, rates that do not fit).
#pragma once

#include <string>
#include <vector>

#include "fitter/data_table.h"
#include "fitter/model_search.h"
#include "fitter/platform_table.h"

namespace invmw::fit {

// How the searched responses transfer.
struct TransferSpec {
  std::vector<std::string> compute;  // responses that are computation time
  std::string scale_kernel = "a3";   // platform parameter their coefficients scale with
  std::string comm;                  // the communication time response ("" = none)
  std::string bytes, messages;       // its profile columns: bytes and messages per run
};

// The measured machine's rate and latency: least squares of comm = messages * b1 + bytes * x
// with x = 1 / (a1 * 1e6), both >= 0, relative errors (as the search).
struct CommRates {
  double a1 = 0, b1 = 0;  // MB/s, s
  double a1_std_error = -1, b1_std_error = -1;
  int rows = 0;
  double rel_rms = 0;  // relative RMS error of the fit over the rows
  std::string note;    // set when one of the two could not be fitted (held at a bound)
};
CommRates FitCommRates(const DataTable& data, const std::string& comm, const std::string& bytes,
                       const std::string& messages);

// Index of result named `response` in `results`, -1 if absent.
int ResultIndex(const std::vector<SearchResult>& results, const std::string& response);

// The model file for `results`: the searches of the responses and, with a comm response, of
// its bytes and messages columns (written as definitions, not components); parameter names as
// CoefficientName(results, ...). The terms of computation responses other than the constant get
// kind "platform", transfer "compute", scale_kernel spec.scale_kernel; the comm response becomes
// messages * b1 + bytes / (a1 * 1e6) (`rates` required then). With two or more responses the
// first one, unless it is itself computation or communication, is the total: the sum of the
// others (so that it transfers with them), tied to its column.
std::string TransferModelToml(const std::vector<SearchResult>& results, const TransferSpec& spec,
                              const CommRates* rates, const std::string& name,
                              const std::string& description);

// The platform table of the measured machine: a1 and b1 (when fitted), every computation
// coefficient of the model as a parameter, and, from `machine` (the data machine's own table,
// e.g. from `invmw platform probe`; may be null), its scale parameter, [measures] and [kernels],
// which the transfer rule of `predict --reference` needs to scale the coefficients.
PlatformTable MeasuredTable(const std::vector<SearchResult>& results, const TransferSpec& spec,
                            const CommRates* rates, const PlatformTable* machine,
                            const std::string& name, const std::string& data_source);

}  // namespace invmw::fit
