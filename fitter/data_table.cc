#include "fitter/data_table.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace invmw::fit {

namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> SplitCells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      cells.push_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  cells.push_back(Trim(cur));
  return cells;
}

}  // namespace

int DataTable::Column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

std::string DataTable::RowOrigin(size_t i) const {
  if (i < labels.size() && !labels[i].empty()) return source + ": " + labels[i];
  if (i < lines.size() && lines[i] > 0) return source + ":" + std::to_string(lines[i]);
  return source + " row " + std::to_string(i + 1);
}

DataTable ParseCsv(const std::string& text, const std::string& source) {
  DataTable t;
  t.source = source;
  std::stringstream ss(text);
  std::string line;
  int lineno = 0;
  while (std::getline(ss, line)) {
    ++lineno;
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    std::vector<std::string> cells = SplitCells(trimmed);
    if (t.columns.empty()) {
      std::set<std::string> seen;
      for (const auto& c : cells) {
        if (c.empty())
          throw DataError(source + ":" + std::to_string(lineno) + ": empty column name");
        if (!seen.insert(c).second)
          throw DataError(source + ":" + std::to_string(lineno) + ": column '" + c +
                          "' appears twice");
      }
      t.columns = cells;
      continue;
    }
    if (cells.size() != t.columns.size()) {
      throw DataError(source + ":" + std::to_string(lineno) + ": " + std::to_string(cells.size()) +
                      " cells, but the header has " + std::to_string(t.columns.size()) +
                      " columns");
    }
    std::vector<double> row(cells.size());
    int col = 1;
    for (size_t j = 0; j < cells.size(); ++j) {
      const std::string& c = cells[j];
      if (c.empty() || c == "NA" || c == "nan" || c == "NaN") {
        row[j] = std::numeric_limits<double>::quiet_NaN();
      } else {
        char* end = nullptr;
        row[j] = std::strtod(c.c_str(), &end);
        if (*end != '\0' || !std::isfinite(row[j])) {
          throw DataError(source + ":" + std::to_string(lineno) + ":" + std::to_string(col) +
                          ": column '" + t.columns[j] + "': '" + c + "' is not a finite number");
        }
      }
      col += static_cast<int>(c.size()) + 1;
    }
    t.rows.push_back(std::move(row));
    t.lines.push_back(lineno);
  }
  if (t.columns.empty())
    throw DataError(source + ": no header line (comma-separated column names)");
  return t;
}

DataTable ReadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw DataError(path + ": cannot open data file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseCsv(ss.str(), path);
}

std::string ToCsv(const DataTable& table) {
  std::ostringstream out;
  out.precision(17);
  for (size_t j = 0; j < table.columns.size(); ++j) out << (j ? "," : "") << table.columns[j];
  out << "\n";
  for (const auto& r : table.rows) {
    for (size_t j = 0; j < r.size(); ++j) {
      if (j) out << ",";
      // "NA", not an empty cell: a row of missing values must not become a blank line, which
      // ParseCsv skips.
      if (std::isnan(r[j]))
        out << "NA";
      else
        out << r[j];
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace invmw::fit
