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

// One CSV line as RFC 4180 reads it: a cell in double quotes may hold commas and "" for a quote
// (a quoted cell is taken as it is, an unquoted one trimmed). *starts gets each cell's column
// (1-based) for messages. Returns false when a quote is not closed on the line.
bool SplitCells(const std::string& line, std::vector<std::string>* cells,
                std::vector<int>* starts) {
  std::string cur;
  bool in_quotes = false, quoted = false;
  int start = 1;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (in_quotes) {
      if (c != '"') {
        cur += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else {
        in_quotes = false;
      }
    } else if (c == '"' && !quoted && Trim(cur).empty()) {
      in_quotes = quoted = true;
      cur.clear();
    } else if (c == ',') {
      cells->push_back(quoted ? cur : Trim(cur));
      starts->push_back(start);
      cur.clear();
      quoted = false;
      start = static_cast<int>(i) + 2;
    } else if (!quoted || (c != ' ' && c != '\t' && c != '\r')) {
      cur += c;
    }
  }
  cells->push_back(quoted ? cur : Trim(cur));
  starts->push_back(start);
  return !in_quotes;
}

bool Missing(const std::string& c) {
  return c.empty() || c == "NA" || c == "nan" || c == "NaN";
}

// A cell that spells a number completely (finite or not).
bool Numeric(const std::string& c, double* v) {
  char* end = nullptr;
  *v = std::strtod(c.c_str(), &end);
  return end != c.c_str() && *end == '\0';
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
  struct Row {
    int line;
    std::vector<std::string> cells;
    std::vector<int> starts;
  };
  std::vector<Row> rows;
  std::vector<std::string> header;
  while (std::getline(ss, line)) {
    ++lineno;
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    Row r{lineno, {}, {}};
    if (!SplitCells(trimmed, &r.cells, &r.starts))
      throw DataError(source + ":" + std::to_string(lineno) +
                      ": a quoted cell is not closed on its line");
    if (header.empty()) {
      std::set<std::string> seen;
      for (const auto& c : r.cells) {
        if (c.empty())
          throw DataError(source + ":" + std::to_string(lineno) + ": empty column name");
        if (!seen.insert(c).second)
          throw DataError(source + ":" + std::to_string(lineno) + ": column '" + c +
                          "' appears twice");
      }
      header = r.cells;
      continue;
    }
    if (r.cells.size() != header.size()) {
      throw DataError(source + ":" + std::to_string(lineno) + ": " +
                      std::to_string(r.cells.size()) + " cells, but the header has " +
                      std::to_string(header.size()) + " columns");
    }
    rows.push_back(std::move(r));
  }
  if (header.empty()) throw DataError(source + ": no header line (comma-separated column names)");
  // A column with no number in it holds text (a platform name, a string factor): like the
  // results database's text factors, it is listed in text_columns instead of being a column.
  // Text among numbers is an error at its cell.
  std::vector<bool> is_text(header.size(), false);
  for (size_t j = 0; j < header.size(); ++j) {
    bool numbers = false, texts = false;
    std::string example;
    double v;
    for (const Row& r : rows) {
      const std::string& c = r.cells[j];
      if (Missing(c)) continue;
      if (Numeric(c, &v)) {
        numbers = true;
      } else if (!texts) {
        texts = true;
        example = c;
      }
    }
    if (texts && !numbers) {
      is_text[j] = true;
      t.text_columns.emplace_back(header[j], example);
    } else {
      t.columns.push_back(header[j]);
    }
  }
  if (t.columns.empty())
    throw DataError(source + ": no column holds numbers (column '" + header[0] +
                    "' holds text such as '" + t.text_columns.front().second + "')");
  for (const Row& r : rows) {
    std::vector<double> row;
    for (size_t j = 0; j < header.size(); ++j) {
      if (is_text[j]) continue;
      const std::string& c = r.cells[j];
      double v = std::numeric_limits<double>::quiet_NaN();
      if (!Missing(c) && (!Numeric(c, &v) || !std::isfinite(v))) {
        throw DataError(source + ":" + std::to_string(r.line) + ":" + std::to_string(r.starts[j]) +
                        ": column '" + header[j] + "': '" + c + "' is not a finite number");
      }
      row.push_back(v);
    }
    t.rows.push_back(std::move(row));
    t.lines.push_back(r.line);
  }
  return t;
}

DataTable ReadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw DataError(path + ": cannot open data file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseCsv(ss.str(), path);
}

namespace {

// A column name as ParseCsv reads it back: quoted when it holds a comma or a quote, would read
// as a comment, or has white space at either end.
std::string CsvName(const std::string& name) {
  const bool plain = !name.empty() && name.find_first_of(",\"") == std::string::npos &&
                     name[0] != '#' && Trim(name) == name;
  if (plain) return name;
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string ToCsv(const DataTable& table) {
  std::ostringstream out;
  out.precision(17);
  for (size_t j = 0; j < table.columns.size(); ++j)
    out << (j ? "," : "") << CsvName(table.columns[j]);
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
