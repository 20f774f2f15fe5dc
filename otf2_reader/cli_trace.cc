// `invmw trace convert|recover|export|check`: the trace verbs.
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "callsites/trace_names.h"
#include "cli/args.h"
#include "cli/verb.h"
#include "otf2_writer/converter.h"
#include "otf2_writer/output_files.h"
#include "otf2_reader/perfetto_export.h"
#include "otf2_reader/trace_check.h"
#include "otf2_reader/trace_reader.h"

namespace invmw::otf2 {
namespace {
namespace fs = std::filesystem;
using cli::Args;
using cli::Fail;

int Convert(int argc, char** argv, bool recover) {
  bool done = false, quiet = false;
  std::vector<std::string> dirs;
  std::string name = "traces";
  Args args(
      recover ? "invmw trace recover [options] DIR" : "invmw trace convert [options] DIR",
      recover
          ? "Builds DIR/traces.otf2 from the raw per-rank trace in DIR/raw/ after a run that did "
            "not\n"
            "finish (crash, abort, signal). Everything the ranks wrote is used: a record cut "
            "short\n"
            "by the crash and files that are missing are reported and skipped, and the archive is\n"
            "marked partial. Exit status 1 when the archive is partial, 0 when it is complete."
          : "Builds DIR/traces.otf2 (with DIR/traces.def and DIR/traces/) from the raw per-rank "
            "trace\n"
            "in DIR/raw/, replacing an existing archive once the new one is complete (a failure,\n"
            "e.g. a full disk, leaves it unchanged). This is what runs at the end of a traced\n"
            "run; `invmw trace recover` is the same conversion for runs that crashed.");
  args.Option("--name", "NAME", &name, "archive name (default traces: NAME.otf2, NAME.def, NAME/)")
      .Flag("--quiet", &quiet, "print problems only")
      .Positional("DIR", &dirs, 1, 1)
      .Epilog(
          "Timestamps stay in each rank's own clock; the archive carries the clock offsets "
          "measured\n"
          "at MPI_Init and MPI_Finalize, which OTF2 readers apply (docs/otf2.md).");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  ConvertOptions options;
  options.archive_name = name;
  std::string error;
  if (!options.IsValid(&error))
    return Fail("--name " + name + ": expected a file name without '/'");
  ConvertResult r;
  try {
    r = ConvertToOtf2(dirs[0], options);
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  // The calling contexts the converter named by object+offset get their file:line names, as
  // `invmw run`'s finish step gives them (the archive's global definitions only).
  callsites::NameTraceCallSites(dirs[0], name, &r.problems);
  for (const auto& p : r.problems) std::fprintf(stderr, "invmw: warning: %s\n", p.c_str());
  if (!quiet)
    std::printf("%s: %d of %d ranks, %llu locations, %llu raw records -> %llu OTF2 events%s\n",
                r.archive.c_str(), r.ranks_converted, r.world_size, (unsigned long long)r.locations,
                (unsigned long long)r.records_in, (unsigned long long)r.events_out,
                r.partial ? " (partial trace)" : "");
  return recover && r.partial ? 1 : 0;
}

int ConvertVerb(int argc, char** argv) {
  return Convert(argc, argv, false);
}
int RecoverVerb(int argc, char** argv) {
  return Convert(argc, argv, true);
}

// DIR or DIR/traces.otf2 -> the anchor file. An experiment directory without an archive
// gets an error that says what to do.
std::string AnchorOf(const std::string& arg) {
  if (!fs::is_directory(arg)) return arg;
  const fs::path anchor = fs::path(arg) / "traces.otf2";
  if (!fs::exists(anchor)) {
    if (fs::exists(fs::path(arg) / "raw" / "defs-000000.jsonl"))
      throw std::runtime_error(arg + ": no traces.otf2, but a raw trace in " + arg +
                               "/raw: build the archive with `invmw trace recover " + arg + "`");
    throw std::runtime_error(arg +
                             ": no trace here (traces.otf2 is written when the run is "
                             "traced: `invmw run --trace` or INVMW_TRACE_ENABLE=1)");
  }
  return anchor.string();
}

int ExportVerb(int argc, char** argv) {
  bool done = false;
  std::string format, out;
  std::vector<std::string> dirs;
  Args args(
      "invmw trace export --format perfetto [-o FILE] DIR",
      "Writes the OTF2 trace of DIR (or the archive DIR/traces.otf2 named directly) as Chrome /\n"
      "Perfetto trace-event JSON: one process per rank, one thread per location, MPI calls as\n"
      "slices (args: bytes, peer, tag, communicator, coalesced calls), point-to-point messages\n"
      "as flow arrows, metrics as counter tracks. Open it at https://ui.perfetto.dev.");
  args.Option("--format", "FORMAT", &format, "output format; only \"perfetto\" is supported")
      .Option("-o", "FILE", &out,
              "output file (default DIR/traces.perfetto.json; not a file of the archive)")
      .Positional("DIR", &dirs, 1, 1);
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (format.empty()) format = "perfetto";
  if (format != "perfetto") return Fail("--format " + format + ": expected perfetto");
  try {
    const std::string anchor = AnchorOf(dirs[0]);
    if (out.empty()) out = (fs::path(anchor).parent_path() / "traces.perfetto.json").string();
    RefuseArchiveOverwrite(anchor, out);  // -o DIR/traces.otf2 would replace the input
    // Streamed: memory does not grow with the events (docs/otf2.md, "Large traces").
    Trace t = ReadTraceDefinitions(anchor);
    PerfettoStats st = ExportPerfettoStreaming(&t, out);
    std::printf("%s: %llu slices (%llu with args), %llu message arrows, %llu counter values\n",
                out.c_str(), (unsigned long long)st.slices, (unsigned long long)st.slices_with_args,
                (unsigned long long)st.flows, (unsigned long long)st.counters);
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
  return 0;
}

int CheckVerb(int argc, char** argv) {
  bool done = false;
  std::vector<std::string> dirs;
  Args args(
      "invmw trace check DIR",
      "Reads the OTF2 trace of DIR (or the archive named directly) and checks it: readable, event\n"
      "counts as declared, timestamps never decreasing per location, regions properly nested,\n"
      "every send matched by a receive and vice versa with equal sizes, and every receive\n"
      "completing after its send began (clock synchronisation). Prints event counts per type and\n"
      "per rank. Exit status 0 when every check passes, 1 when one fails, 2 when unreadable.");
  args.Positional("DIR", &dirs, 1, 1);
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  try {
    Trace t = ReadTraceDefinitions(AnchorOf(dirs[0]));
    CheckReport r = CheckTraceStreaming(&t);
    PrintCheckReport(t, r, stdout);
    return r.ok ? 0 : 1;
  } catch (const std::exception& e) {
    return Fail(e.what());
  }
}

}  // namespace

INVMW_VERB("trace convert", "build traces.otf2 from a run's raw trace", ConvertVerb);
INVMW_VERB("trace recover", "build traces.otf2 from the raw trace of a crashed run", RecoverVerb);
INVMW_VERB("trace export", "export a trace as Perfetto/Chrome JSON", ExportVerb);
INVMW_VERB("trace check", "validate a trace and count its events", CheckVerb);

}  // namespace invmw::otf2
