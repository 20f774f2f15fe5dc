// Resolved names for the calling contexts of an archive the converters wrote with object+offset
// names (trace_callsites.h): after the run, the finish step (`invmw run`, `invmw profile DIR`)
// resolves the call sites with DWARF and gives each context its function, file and line.
//
// Why only the global definitions: the events name contexts by reference, and a context's
// function region, source location and their strings are global definitions. The converter
// wrote one string of its own for each name and file and a SourceCodeLocation for every
// context, so renaming changes string contents and line numbers only: every reference and the
// number of definitions (which the anchor file records) stay as they were. traces.def is
// copied definition by definition through OTF2's reader and writer into a temporary archive
// next to the run, and its .def file renamed over the old one; the anchor and the event files
// are not touched, so the step's time depends on the definitions, not on the events.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace invmw::otf2 {

struct ContextName {
  std::string function;  // the application's function ("" unknown: the label stays)
  std::string file;      // "" without debug information (the file string keeps the label)
  uint32_t line = 0;
};

struct NameResult {
  bool ok = false;
  std::string error;    // !ok: why; the archive is unchanged
  size_t contexts = 0;  // contexts in the archive
  size_t renamed = 0;   // of them, given a name from `names`
};

// names: by label ("prog+0x11d5"). Renaming again (with the same or better names) works: the
// label is kept in each context region's canonical name. An archive without contexts is left
// alone (ok, contexts = 0).
NameResult NameTraceContexts(const std::string& run_dir, const std::string& archive_name,
                             const std::map<std::string, ContextName>& names);

}  // namespace invmw::otf2
