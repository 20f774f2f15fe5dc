// A design's runs from the results database (contract D; results/results_db.h reads the rows)
// as the effects analysis and the export use them: factors and responses parsed and checked.
//
// Rows are read as they are, failed ones included: the analysis uses only rows with
// status 'ok', but a failed row still tells which design points exist and why one has no data,
// which is what a useful "missing point" error needs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace invmw::effects {

struct Run {
  int64_t id = 0;
  int64_t point = 0;        // design point index in standard order
  int64_t replication = 0;  // 0-based
  std::string platform;
  int64_t run_order = -1;                   // -1 when NULL
  nlohmann::ordered_json factors;           // {factor: number or string}, in the order written
  std::map<std::string, double> responses;  // numeric responses only (null entries are absent)
  std::vector<std::string> response_order;  // response names in the order written
  bool ok = false;                          // status == 'ok'
  std::string error;                        // the row's error text, for failed runs
};

// All rows of `design` (ok and failed), ordered by point, replication, platform. Returns false
// and sets *error when the database cannot be opened, lacks the runs table, or a row's factors
// or responses are not the JSON objects the contract promises (the message names the row id
// and the column). A design with no rows is not an error here (the caller decides).
bool LoadRuns(const std::string& db_path, const std::string& design, std::vector<Run>* runs,
              std::string* error);

// Names of the designs present in the database (to suggest one when the name is wrong).
std::vector<std::string> DesignNames(const std::string& db_path);

}  // namespace invmw::effects
