// `invmw platform export --format simgrid`: a platform table as a SimGrid platform for SMPI, so
// that an application can be simulated on the machine a table describes (issue 19). The
// conversion is fitter/simgrid_export.h; this verb adds the emulated platforms' rate limits and
// writes the three files.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/verb.h"
#include "fitter/file_io.h"
#include "fitter/platform_table.h"
#include "fitter/simgrid_export.h"
#include "platforms/emulate/platform.h"

namespace invmw::platforms::cli {
namespace {

using invmw::cli::Args;
using invmw::cli::Fail;

bool ParseNumber(const std::string& text, double min, double* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(v >= min) || !(v < 1e300)) return false;
  *out = v;
  return true;
}

// Whether `smpirun` is on PATH: the files are useful elsewhere, but whoever exports here most
// likely means to run them here, and an absent SimGrid is better said now than at smpirun time.
bool SmpirunOnPath() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string d = dirs.substr(start, end - start);
    if (access(((d.empty() ? "." : d) + "/smpirun").c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// X.xml -> X.<ext>; other names get .<ext> appended.
std::string Beside(const std::string& xml, const std::string& ext) {
  const std::string suffix = ".xml";
  if (xml.size() > suffix.size() && xml.compare(xml.size() - 4, 4, suffix) == 0)
    return xml.substr(0, xml.size() - 4) + "." + ext;
  return xml + "." + ext;
}

int RunExport(int argc, char** argv) {
  bool done = false, force = false;
  std::string format, out, hostfile, cfg, dir, nodes, topology, fat_tree, bb_bw, bb_lat, emu;
  std::vector<std::string> names;
  Args args(
      "invmw platform export --format simgrid TABLE -o PLATFORM.xml [options]",
      "Writes a platform table as a SimGrid platform for SMPI: PLATFORM.xml, the hostfile\n"
      "PLATFORM.hostfile (one line per node) and PLATFORM.cfg (the smpirun --cfg arguments\n"
      "that make SMPI send at the table's figures; the XML's <config> holds the same). Links\n"
      "get bandwidth a1 (MB/s = 10^6 B/s) and latencies summing to b1 along a route; hosts get\n"
      "the speed 100 flops / a3 (else measures.mflops_adjusted, else measures.mflops). A table's\n"
      "topology and measures.backbone_bw / backbone_lat give a shared backbone or a fat tree.");
  args.Option("--format", "FORMAT", &format, "output format (simgrid, required)")
      .Option("-o", "FILE", &out, "platform XML to write (required)")
      .Option("--hostfile", "FILE", &hostfile, "hostfile to write (default: FILE's .hostfile)")
      .Option("--cfg", "FILE", &cfg, "SMPI --cfg arguments to write (default: FILE's .cfg)")
      .Flag("--force", &force, "overwrite existing output files")
      .Option("--nodes", "N", &nodes, "hosts in the cluster (default 2, or --platform's nodes)")
      .Option("--topology", "T", &topology, "cluster or fat-tree (default: the table's, cluster)")
      .Option("--fat-tree", "PARAMS", &fat_tree,
              "SimGrid FAT_TREE topo_parameters LEVELS;DOWN,...;UP,...;COUNT,...")
      .Option("--backbone-bw", "MB/s", &bb_bw, "shared backbone bandwidth (overrides the table)")
      .Option("--backbone-lat", "S", &bb_lat, "backbone latency in s, part of b1 (default 0)")
      .Option("--platform", "EMU", &emu,
              "the emulated platform the table was probed on: its nodes, and its rate limit as "
              "the shared backbone")
      .Option("--tables", "DIR", &dir, "directory of platform tables")
      .Positional("TABLE", &names, 1, 1)
      .Epilog(
          "Example:\n"
          "  invmw platform export --format simgrid fast-cops --nodes 8 -o fast.xml\n"
          "  smpirun -platform fast.xml -hostfile fast.hostfile -np 8 $(cat fast.cfg) ./app\n\n"
          "Conversions and caveats: docs/platforms.md \"SimGrid export\".\n");
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (format != "simgrid")
    return Fail("platform export: --format " +
                (format.empty() ? "is required" : "'" + format + "'") + " (supported: simgrid)");
  if (out.empty()) return Fail("platform export: -o PLATFORM.xml is required");
  if (hostfile.empty()) hostfile = Beside(out, "hostfile");
  if (cfg.empty()) cfg = Beside(out, "cfg");
  if (hostfile == out || cfg == out || cfg == hostfile)
    return Fail("platform export: -o, --hostfile and --cfg must be three different files");

  fit::SimgridOptions o;
  o.topology = topology;
  o.fat_tree = fat_tree;
  if (!nodes.empty()) {
    double n = 0;
    if (!ParseNumber(nodes, 2, &n) || n != static_cast<int>(n) || n > 1000000)
      return Fail("platform export: --nodes '" + nodes +
                  "': expected an integer from 2 to 1000000");
    o.nodes = static_cast<int>(n);
  }
  if (!bb_bw.empty() && (!ParseNumber(bb_bw, 0, &o.backbone_bw) || o.backbone_bw <= 0))
    return Fail("platform export: --backbone-bw '" + bb_bw + "': expected a rate > 0 in MB/s");
  if (!bb_bw.empty()) o.backbone_source = "--backbone-bw";
  if (!bb_lat.empty() && !ParseNumber(bb_lat, 0, &o.backbone_lat))
    return Fail("platform export: --backbone-lat '" + bb_lat + "': expected seconds >= 0");
  try {
    if (!emu.empty()) {
      emulate::Platform ep = emulate::LoadPlatform(emu);
      if (o.nodes == 0 && ep.nodes >= 2) o.nodes = ep.nodes;
      // The emulated rate limit is one token bucket shared by all nodes and both directions:
      // exactly a shared backbone (platforms/emulated/*.toml "caveat").
      if (ep.rate_bps > 0 && bb_bw.empty()) {
        o.backbone_bw = static_cast<double>(ep.rate_bps) / 8e6;
        o.backbone_source = "the rate limit " + ep.rate_text + " of emulated platform " + ep.name;
      }
    }
    fit::PlatformTable t = fit::LoadPlatformTable(fit::ResolvePlatformTable(names[0], dir));
    fit::SimgridPlatform p = fit::ExportSimgrid(t, o);
    if (!force) {
      for (const std::string* f : {&out, &hostfile, &cfg})
        if (access(f->c_str(), F_OK) == 0)
          return Fail("platform export: " + *f + " exists (use --force to overwrite it)");
    }
    fit::WriteFileAtomic(out, p.xml);
    fit::WriteFileAtomic(hostfile, p.hostfile);
    fit::WriteFileAtomic(cfg, p.cfg);
    std::printf("wrote %s, %s, %s: %d hosts at %.6g flop/s (%s), links %.6g B/s, %.6g s",
                out.c_str(), hostfile.c_str(), cfg.c_str(), p.nodes, p.speed_flops,
                p.speed_from.c_str(), p.link_bw_Bps, p.link_lat_s);
    if (p.backbone_bw_Bps > 0)
      std::printf(", shared backbone %.6g B/s, %.6g s", p.backbone_bw_Bps, p.backbone_lat_s);
    std::printf("\n");
    if (!SmpirunOnPath())
      std::fprintf(stderr,
                   "invmw: note: smpirun is not on PATH: running %s needs SimGrid's SMPI (Debian "
                   "libsimgrid-dev, scripts/setup.sh)\n",
                   out.c_str());
    return 0;
  } catch (const std::exception& e) {
    return Fail(std::string("platform export: ") + e.what());
  }
}

}  // namespace

INVMW_VERB("platform export", "write a platform table as a SimGrid platform (SMPI)", RunExport);

}  // namespace invmw::platforms::cli
