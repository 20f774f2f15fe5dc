// Fuzz target: the CSV reader of the fitter (fitter/data_table.cc, ParseCsv). Contract checked:
// ParseCsv throws only DataError; an accepted table has one value per column in every row and
// survives ToCsv and a second parse with the same shape.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fitter/data_table.h"

using namespace invmw::fit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  DataTable t;
  try {
    t = ParseCsv(text, "fuzz.csv");
  } catch (const DataError&) {
    return 0;
  }
  for (const auto& row : t.rows)
    if (row.size() != t.columns.size()) std::abort();
  for (size_t i = 0; i < t.rows.size(); ++i) t.RowOrigin(i);
  for (const auto& c : t.columns) t.Column(c);
  const std::string again = ToCsv(t);
  DataTable u;
  try {
    u = ParseCsv(again, "again.csv");
  } catch (const DataError& e) {
    std::fprintf(stderr, "ToCsv output does not parse again: %s\n", e.what());
    std::abort();
  }
  if (u.columns != t.columns || u.rows.size() != t.rows.size()) {
    std::fprintf(stderr, "ToCsv output parses to another shape\n");
    std::abort();
  }
  return 0;
}
