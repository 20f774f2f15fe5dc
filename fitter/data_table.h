// Measurements to fit: one row per design point (or run), columns for factor values and
// measured response variables.
//
// Why a plain table: the fitter must not care where measurements come from. Today they come
// from CSV files; the experiments part will add a loader from its SQLite results database that
// fills the same structure (column names = factor and response names, one row per run). Missing
// values are NaN, so a run that did not measure a component still contributes its total time.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace invmw::fit {

struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct DataTable {
  std::string source;  // for messages: a file name or a database query
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;  // rows[i][j]: column j of row i; NaN when missing
  std::vector<int> lines;                 // source line of each row (0 if not from a file)
  // Optional, for rows not from a text file: what each row is, e.g. "run 17 (point 3,
  // replication 0)". When present, RowOrigin uses it.
  std::vector<std::string> labels;
  // Optional: design point of each row. Rows with equal groups are replications of one point;
  // leave-one-out cross-validation leaves out a whole group. Empty: every row is its own point.
  std::vector<long> groups;
  // Optional: replication index of each row (results database); pairs a run with the run of the
  // same point and replication on another platform (invmw validate --pair-platform).
  std::vector<long> replications;
  // Columns known to hold measured responses rather than factor settings (filled by the
  // results-database loader; empty for CSV, where only the names of contract B are known).
  std::vector<std::string> response_columns;
  // Columns of the source whose values are text, not numbers (name -> an example value); they
  // cannot be used as factors, and the fitter says so when a model needs one.
  std::vector<std::pair<std::string, std::string>> text_columns;

  int Column(const std::string& name) const;  // -1 if absent
  // Where row i came from, e.g. "data.csv:12".
  std::string RowOrigin(size_t i) const;
};

// CSV with a header line of column names; '#' starts a comment line; cells may be quoted as
// RFC 4180 says (on one line); empty, "NA" and "nan" cells are missing. A column without any
// number (e.g. `platform` of `invmw results export`) is listed in text_columns, not in columns.
// Throws DataError naming file, line and column on text in a column of numbers.
DataTable ParseCsv(const std::string& text, const std::string& source);
DataTable ReadCsv(const std::string& path);
// Writes a table as CSV (used by tests and by synthetic-data generation).
std::string ToCsv(const DataTable& table);

}  // namespace invmw::fit
