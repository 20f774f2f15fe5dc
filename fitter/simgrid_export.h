// A platform table as a SimGrid platform (issue 19): the XML, the hostfile and the SMPI
// configuration under which SMPI's simulated network reproduces the table's a1 and b1.
//
// Why here and not with SimGrid: the conversion is a reading of the table's units (a1 in MB/s,
// b1 in s, compute parameters in s per operation), so it lives beside the table parser; the
// export needs no SimGrid library, only its documented XML (platform version 4.1).
// Conversions (docs/platforms.md "SimGrid export"):
//   link bandwidth = a1 x 10^6 B/s;  route latency = b1, split evenly over the links of the
//   longest route (cluster: 2 private links [+ the backbone's own latency]; fat tree: 2 x levels);
//   host speed = 100 flops / a3 (the tables' flop count per pair energy), else
//   measures.mflops_adjusted x 10^6, else measures.mflops x 10^6.
#pragma once

#include <string>

#include "fitter/platform_table.h"

namespace invmw::fit {

struct SimgridOptions {
  int nodes = 0;                // 0: 2, or the product of the fat tree's down links
  std::string topology;         // "" = the table's, else "cluster" or "fat-tree"
  std::string fat_tree;         // SimGrid topo_parameters, "LEVELS;DOWN,...;UP,...;COUNT,..."
  double backbone_bw = -1;      // MB/s; < 0: the table's measures.backbone_bw (if any)
  double backbone_lat = -1;     // s; < 0: the table's measures.backbone_lat (else 0)
  std::string backbone_source;  // where an overriding backbone came from (for the XML comment)
};

struct SimgridPlatform {
  std::string xml, hostfile;
  std::string cfg;  // smpirun arguments, one per line (--cfg=...)
  // What was chosen, for the user and the tests.
  int nodes = 0;
  double speed_flops = 0, link_bw_Bps = 0, link_lat_s = 0, backbone_bw_Bps = 0, backbone_lat_s = 0;
  std::string speed_from;
};

// Throws TableError naming the table and the field when a value SimGrid needs is missing or
// unusable, or the options contradict each other.
SimgridPlatform ExportSimgrid(const PlatformTable& table, const SimgridOptions& options);

}  // namespace invmw::fit
