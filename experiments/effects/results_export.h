// Export of a design's successful runs for other tools: CSV (one row per run, factors and
// responses as columns) and Extra-P's JSON-lines input (one line per run and response:
// {"params": {factor: number, ...}, "metric": response, "value": y}), so that models fitted by
// invmw can be cross-checked with Extra-P or a spreadsheet.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "experiments/effects/results_db.h"

namespace invmw::effects {

struct ExportOptions {
  std::string platform;                                    // "": every platform
  std::vector<std::pair<std::string, std::string>> where;  // keep runs with factor == value
  std::vector<std::string> responses;                      // empty: all recorded
};

// Selects the ok rows (platform, where) and checks the requested responses exist. Fails with a
// message naming the unknown factor or response.
bool SelectRuns(const std::vector<Run>& rows, const ExportOptions& options,
                std::vector<Run>* selected, std::vector<std::string>* factor_names,
                std::vector<std::string>* response_names, std::string* error);

// Columns: point, replication, platform, the factors, the responses (empty cell: not
// recorded). Fields are quoted as RFC 4180 asks; numbers are written with 17 significant
// digits so that they read back exactly.
bool WriteCsv(const std::vector<Run>& rows, const ExportOptions& options, std::ostream& out,
              std::string* error);

// Extra-P parameters must be numbers: a string factor with one value in the selection is
// left out (reported in *note), one with several values is an error suggesting --where.
bool WriteExtrapJsonLines(const std::vector<Run>& rows, const ExportOptions& options,
                          std::ostream& out, std::string* note, std::string* error);

// The CSV form of one field.
std::string CsvField(const std::string& s);

}  // namespace invmw::effects
