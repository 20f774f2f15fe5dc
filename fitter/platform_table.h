// Platform tables: the measured or calibrated parameters of one machine, with units and the
// provenance of every value, in a versioned TOML file (platforms/tables/*.toml, schema 1).
//
// Why files with provenance: predictions are only as good as the numbers fed in, and a number
// whose origin is unknown cannot be checked. A table holds model parameters ([parameters]: a1,
// b1, a2, ...) and raw measures that are not model parameters but drive the transfer rule
// ([measures]: compute rates, peak bandwidth, latency; [kernels]: kernel time per compute
// parameter). Contract: Load throws TableError naming file, line, column and field.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace invmw::fit {

struct TableError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TableValue {
  std::string name;
  double value = 0;
  std::string unit, source;
  double std_error = -1;  // < 0: not given
};

struct PlatformTable {
  int schema = 1;
  std::string name, title, description, path;
  // Network shape for the SimGrid export: "" (unstated), "cluster" or "fat-tree". A backbone is
  // stated as measures.backbone_bw (MB/s) and measures.backbone_lat (s).
  std::string topology;
  std::vector<TableValue> parameters, measures, kernels;

  const TableValue* Parameter(const std::string& n) const;
  const TableValue* Measure(const std::string& n) const;
  const TableValue* Kernel(const std::string& n) const;
};

PlatformTable LoadPlatformTable(const std::string& path);
PlatformTable ParsePlatformTable(const std::string& text, const std::string& source);
std::string FormatPlatformTable(const PlatformTable& table);  // TOML text, schema 1

// Directory searched for tables by name: `dir` if not empty, else the source tree's
// platforms/tables (compiled in).
std::string PlatformTablesDir(const std::string& dir);
// A name ("fast-cops") found in the tables directory, or a path to a file.
std::string ResolvePlatformTable(const std::string& name_or_path, const std::string& dir);
// Names of the tables in the directory, sorted.
std::vector<std::string> ListPlatformTables(const std::string& dir);

}  // namespace invmw::fit
