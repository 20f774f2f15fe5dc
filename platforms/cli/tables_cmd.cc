// `invmw platform show` and `invmw platform compare`: platform tables as people read them, with
// the provenance of every value, and side by side with ratios to the first table.
#include <cmath>
#include <cstdio>
#include <set>

#include "cli/args.h"
#include "cli/verb.h"
#include "fitter/cli_common.h"
#include "fitter/platform_table.h"

namespace invmw::platforms::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;
using invmw::fit::cli::Fmt;
using namespace invmw::fit;

int RunShow(int argc, char** argv) {
  bool done = false;
  std::string dir;
  std::vector<std::string> names;
  Args args("invmw platform show [NAME|FILE]...",
            "Prints platform tables with units and the source of every value. Without\n"
            "arguments, lists the tables in the tables directory.");
  args.Option("--tables", "DIR", &dir, "directory of platform tables")
      .Positional("NAME", &names, 0, -1);
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  try {
    if (names.empty()) {
      std::printf("platform tables in %s:\n", PlatformTablesDir(dir).c_str());
      for (const auto& n : ListPlatformTables(dir)) {
        PlatformTable t = LoadPlatformTable(ResolvePlatformTable(n, dir));
        std::printf("  %-16s %s\n", n.c_str(), t.title.c_str());
      }
      return 0;
    }
    for (const auto& n : names) {
      PlatformTable t = LoadPlatformTable(ResolvePlatformTable(n, dir));
      std::printf("%s: %s (%s)\n", t.name.c_str(), t.title.c_str(), t.path.c_str());
      if (!t.description.empty()) std::printf("  %s\n", t.description.c_str());
      if (!t.topology.empty()) std::printf("  topology: %s\n", t.topology.c_str());
      auto section = [](const char* title, const std::vector<TableValue>& vals) {
        if (vals.empty()) return;
        std::printf("  %s:\n", title);
        for (const auto& v : vals) {
          std::printf("    %-16s %s %-8s", v.name.c_str(), Fmt(v.value).c_str(), v.unit.c_str());
          if (v.std_error >= 0) std::printf(" +- %s", Fmt(v.std_error, 0).c_str());
          std::printf("  %s\n", v.source.c_str());
        }
      };
      section("parameters", t.parameters);
      section("measures", t.measures);
      section("kernels", t.kernels);
      std::printf("\n");
    }
    return 0;
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

int RunCompare(int argc, char** argv) {
  bool done = false;
  std::string dir;
  std::vector<std::string> names;
  Args args("invmw platform compare A B [C ...]",
            "Prints platform tables side by side, each value followed by its ratio to the first\n"
            "table's (\"x\" column).");
  args.Option("--tables", "DIR", &dir, "directory of platform tables")
      .Positional("TABLE", &names, 2, -1);
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  try {
    std::vector<PlatformTable> ts;
    for (const auto& n : names) ts.push_back(LoadPlatformTable(ResolvePlatformTable(n, dir)));
    std::printf("%-16s %-8s", "VALUE", "UNIT");
    for (size_t i = 0; i < ts.size(); ++i)
      std::printf(" %11s%s", ts[i].name.substr(0, 11).c_str(), i ? "       x" : "");
    std::printf("\n");
    auto rows = [&](const char* section, std::vector<TableValue> PlatformTable::*member) {
      std::vector<std::string> keys;
      std::set<std::string> seen;
      for (const auto& t : ts)
        for (const auto& v : t.*member)
          if (seen.insert(v.name).second) keys.push_back(v.name);
      if (keys.empty()) return;
      std::printf("[%s]\n", section);
      for (const auto& k : keys) {
        const TableValue* first = nullptr;
        std::string unit;
        for (const auto& t : ts)
          for (const auto& v : t.*member)
            if (v.name == k && unit.empty()) unit = v.unit;
        std::printf("%-16s %-8s", k.c_str(), unit.c_str());
        for (size_t i = 0; i < ts.size(); ++i) {
          const TableValue* v = nullptr;
          for (const auto& x : ts[i].*member)
            if (x.name == k) v = &x;
          if (i == 0) first = v;
          std::printf(" %s", Fmt(v ? v->value : NAN).c_str());
          if (i)
            std::printf(
                " %s",
                Fmt(v && first && first->value != 0 ? v->value / first->value : NAN, 7).c_str());
        }
        std::printf("\n");
      }
    };
    rows("parameters", &PlatformTable::parameters);
    rows("measures", &PlatformTable::measures);
    rows("kernels", &PlatformTable::kernels);
    return 0;
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

}  // namespace

INVMW_VERB("platform show", "print platform tables with units and sources", RunShow);
INVMW_VERB("platform compare", "compare platform tables side by side with ratios", RunCompare);

}  // namespace invmw::platforms::cli
