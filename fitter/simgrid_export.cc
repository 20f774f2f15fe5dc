#include "fitter/simgrid_export.h"
#include "common/xml_escape.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace invmw::fit {

namespace {

// Round-trips a double exactly: SimGrid reads the values back with strtod.
std::string Num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// XML comments may not contain "--" nor end in '-'; the table's free text may.
std::string CommentText(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '-' && !o.empty() && o.back() == '-') o += ' ';
    o += (c == '\n' ? ' ' : c);
  }
  if (!o.empty() && o.back() == '-') o += ' ';
  return o;
}

[[noreturn]] void Refuse(const PlatformTable& t, const std::string& msg) {
  throw TableError((t.path.empty() ? t.name : t.path) + ": " + msg);
}

// A [parameters] or [measures] value in the unit the conversion assumes.
const TableValue* Checked(const PlatformTable& t, const TableValue* v, const char* field,
                          const char* unit) {
  if (v && v->unit != unit)
    Refuse(t, std::string(field) + " has unit '" + v->unit + "': the SimGrid export reads it in " +
                  unit);
  return v;
}

struct FatTree {
  int levels = 0;
  std::vector<int> down, up, count;
};

FatTree ParseFatTree(const std::string& text) {
  auto bad = [&](const std::string& why) -> FatTree {
    throw TableError("--fat-tree '" + text + "': " + why +
                     " (expected LEVELS;DOWN,...;UP,...;COUNT,..., SimGrid's topo_parameters, "
                     "e.g. 2;4,4;1,2;1,2)");
  };
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string p; std::getline(ss, p, ';');) parts.push_back(p);
  if (parts.size() != 4) return bad("four ';'-separated fields");
  FatTree f;
  char* end = nullptr;
  long l = std::strtol(parts[0].c_str(), &end, 10);
  if (parts[0].empty() || *end || l < 1 || l > 16) return bad("LEVELS must be 1..16");
  f.levels = int(l);
  for (int i = 1; i < 4; ++i) {
    std::vector<int>& v = i == 1 ? f.down : i == 2 ? f.up : f.count;
    std::stringstream ls(parts[i]);
    for (std::string x; std::getline(ls, x, ',');) {
      long n = std::strtol(x.c_str(), &end, 10);
      if (x.empty() || *end || n < 1 || n > 65536) return bad("'" + x + "' is not a count >= 1");
      v.push_back(int(n));
    }
    if (int(v.size()) != f.levels) return bad("each list needs LEVELS numbers");
  }
  return f;
}

}  // namespace

SimgridPlatform ExportSimgrid(const PlatformTable& t, const SimgridOptions& o) {
  SimgridPlatform p;
  const TableValue* a1 = Checked(t, t.Parameter("a1"), "parameters.a1", "MB/s");
  const TableValue* b1 = Checked(t, t.Parameter("b1"), "parameters.b1", "s");
  if (!a1)
    Refuse(t,
           "parameters.a1 (the communication rate, MB/s) is missing: SimGrid needs the "
           "link bandwidth");
  if (!(a1->value > 0)) Refuse(t, "parameters.a1 must be > 0 MB/s for a link bandwidth");
  if (!b1)
    Refuse(t,
           "parameters.b1 (the per-message time, s) is missing: SimGrid needs the "
           "route latency");
  p.link_bw_Bps = a1->value * 1e6;

  // Compute speed: a3 is what the model's predictions use; the raw rates are the fallback.
  if (const TableValue* a3 = Checked(t, t.Parameter("a3"), "parameters.a3", "s")) {
    if (!(a3->value > 0)) Refuse(t, "parameters.a3 must be > 0 s for a host speed");
    p.speed_flops = 100.0 / a3->value;
    p.speed_from = "100 flops / parameters.a3";
  } else if (const TableValue* m =
                 Checked(t, t.Measure("mflops_adjusted"), "measures.mflops_adjusted", "MFlop/s")) {
    p.speed_flops = m->value * 1e6;
    p.speed_from = "measures.mflops_adjusted x 10^6";
  } else if (const TableValue* m2 = Checked(t, t.Measure("mflops"), "measures.mflops", "MFlop/s")) {
    p.speed_flops = m2->value * 1e6;
    p.speed_from = "measures.mflops x 10^6";
  } else {
    Refuse(t,
           "parameters.a3 (or measures.mflops_adjusted) is missing: SimGrid needs a host "
           "speed");
  }

  const std::string topology =
      o.topology.empty() ? (t.topology.empty() ? "cluster" : t.topology) : o.topology;
  if (topology != "cluster" && topology != "fat-tree")
    throw TableError("topology '" + topology + "': expected cluster or fat-tree");

  double bb_bw = o.backbone_bw;
  double bb_lat = o.backbone_lat;
  std::string bb_from = o.backbone_source;
  if (bb_bw < 0) {
    if (const TableValue* v =
            Checked(t, t.Measure("backbone_bw"), "measures.backbone_bw", "MB/s")) {
      bb_bw = v->value;
      bb_from = "measures.backbone_bw" + (v->source.empty() ? "" : " (" + v->source + ")");
    }
  }
  if (bb_lat < 0) {
    const TableValue* v = Checked(t, t.Measure("backbone_lat"), "measures.backbone_lat", "s");
    bb_lat = v ? v->value : 0;
  }
  const bool backbone = bb_bw > 0;

  FatTree ft;
  int route_links = 2;
  if (topology == "fat-tree") {
    if (backbone)
      throw TableError(
          "a fat tree has no backbone: drop measures.backbone_bw (or use "
          "--topology cluster)");
    if (o.fat_tree.empty())
      throw TableError("--topology fat-tree needs --fat-tree LEVELS;DOWN,...;UP,...;COUNT,...");
    ft = ParseFatTree(o.fat_tree);
    int hosts = 1;
    for (int d : ft.down) {
      if (hosts > 1000000 / d) throw TableError("--fat-tree '" + o.fat_tree + "': too many hosts");
      hosts *= d;
    }
    if (o.nodes > 0 && o.nodes != hosts)
      throw TableError("--nodes " + std::to_string(o.nodes) + " but --fat-tree '" + o.fat_tree +
                       "' has " + std::to_string(hosts) + " hosts (the product of DOWN)");
    p.nodes = hosts;
    route_links = 2 * ft.levels;
  } else {
    p.nodes = o.nodes > 0 ? o.nodes : 2;
    if (p.nodes < 2 || p.nodes > 1000000) throw TableError("--nodes must be 2..1000000");
  }
  if (backbone && bb_lat > b1->value)
    Refuse(t, "the backbone latency " + Num(bb_lat) +
                  " s exceeds parameters.b1 = " + Num(b1->value) + " s, the whole route's latency");
  p.backbone_bw_Bps = backbone ? bb_bw * 1e6 : 0;
  p.backbone_lat_s = backbone ? bb_lat : 0;
  p.link_lat_s = (b1->value - p.backbone_lat_s) / route_links;

  std::ostringstream x;
  x << "<?xml version='1.0'?>\n"
       "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
       "<!-- Written by `invmw platform export` (format simgrid) from platform table "
    << CommentText(t.name);
  if (!t.path.empty()) x << " (" << CommentText(t.path) << ")";
  x << ".\n     link bandwidth = a1 = " << Num(a1->value)
    << " MB/s; route latency = b1 = " << Num(b1->value) << " s";
  if (topology == "fat-tree")
    x << " over the " << route_links << " links of the longest route (nearer hosts see less)";
  else if (backbone)
    x << " = 2 x link latency + backbone latency";
  else
    x << " = 2 x link latency";
  x << ";\n     host speed = " << CommentText(p.speed_from) << " = " << Num(p.speed_flops)
    << " flop/s";
  if (backbone)
    x << ";\n     shared backbone " << Num(bb_bw) << " MB/s from " << CommentText(bb_from);
  x << ".\n     The <config> below (also in the .cfg file) makes SMPI send at these figures: "
       "no\n     bandwidth or latency factors, no cross traffic. See docs/platforms.md. -->\n";
  x << "<platform version=\"4.1\">\n"
       "  <config>\n"
       "    <prop id=\"smpi/bw-factor\" value=\"0:1\"/>\n"
       "    <prop id=\"smpi/lat-factor\" value=\"0:1\"/>\n"
       "    <prop id=\"network/crosstraffic\" value=\"0\"/>\n"
       "  </config>\n"
       "  <zone id=\"world\" routing=\"Full\">\n";
  x << "    <cluster id=\"" << XmlEscape(t.name) << "\" prefix=\"node-\" radical=\"0-"
    << (p.nodes - 1) << "\" suffix=\"\" speed=\"" << Num(p.speed_flops) << "f\" bw=\""
    << Num(p.link_bw_Bps) << "Bps\" lat=\"" << Num(p.link_lat_s) << "s\"";
  if (topology == "fat-tree") {
    x << " topology=\"FAT_TREE\" topo_parameters=\"" << XmlEscape(o.fat_tree) << "\"";
  } else if (backbone) {
    x << " bb_bw=\"" << Num(p.backbone_bw_Bps) << "Bps\" bb_lat=\"" << Num(p.backbone_lat_s)
      << "s\" bb_sharing_policy=\"SHARED\"";
  }
  x << "/>\n  </zone>\n</platform>\n";
  p.xml = x.str();

  for (int i = 0; i < p.nodes; ++i) p.hostfile += "node-" + std::to_string(i) + "\n";
  p.cfg = "--cfg=smpi/bw-factor:0:1\n--cfg=smpi/lat-factor:0:1\n--cfg=network/crosstraffic:0\n";
  return p;
}

}  // namespace invmw::fit
