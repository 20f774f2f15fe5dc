// `invmw config list`: every INVMW_* variable with type, default, current value and meaning.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/args.h"
#include "cli/verb.h"
#include "common/config.h"

namespace invmw::cli {
namespace {

int ConfigList(int argc, char** argv) {
  bool done = false;
  Args args("invmw config list",
            "Lists every INVMW_* environment variable the runtime and tools read, with its type, "
            "default,\nthe value set in this environment (if any) and its meaning. Bad values "
            "are reported\nhere and, at run time, once by rank 0; the default is used instead.");
  bool markdown = false;
  args.Flag("--markdown", &markdown,
            "print the table in Markdown (the README's configuration table is made with it)");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (markdown) {
    std::printf("| variable | type | default | meaning |\n|---|---|---|---|\n");
    for (const auto& v : config::Variables()) {
      std::string desc = v.description;
      for (size_t i = 0; (i = desc.find('|', i)) != std::string::npos; i += 2) desc.insert(i, "\\");
      std::printf("| `%s` | %s | %s | %s |\n", v.name, config::TypeName(v.type),
                  *v.default_value ? v.default_value : "", desc.c_str());
    }
    return 0;
  }
  std::printf("%-28s %-9s %-8s %s\n", "VARIABLE", "TYPE", "DEFAULT", "DESCRIPTION");
  for (const auto& v : config::Variables()) {
    const char* set = std::getenv(v.name);
    std::printf("%-28s %-9s %-8s %s\n", v.name, config::TypeName(v.type),
                *v.default_value ? v.default_value : "\"\"", v.description);
    if (set) std::printf("%-28s   set to: %s\n", "", set);
  }
  config::Config cfg = config::Load();
  for (const auto& w : cfg.warnings) std::fprintf(stderr, "invmw: warning: %s\n", w.c_str());
  return cfg.warnings.empty() ? 0 : 1;
}

}  // namespace

INVMW_VERB("config list", "list the INVMW_* configuration variables", ConfigList);

}  // namespace invmw::cli
