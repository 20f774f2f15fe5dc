#include "fitter/simgrid_export.h"

#include <gtest/gtest.h>

#include <string>

#include "fitter/platform_table.h"

namespace invmw::fit {
namespace {

const char* kBase = R"(schema = 1
name = "t"
[parameters]
a1 = { value = 30, unit = "MB/s", source = "x" }
b1 = { value = 2e-5, unit = "s", source = "x" }
a3 = { value = 1e-6, unit = "s", source = "x" }
)";

std::string ErrorOf(const std::string& text, const SimgridOptions& o = {}) {
  try {
    ExportSimgrid(ParsePlatformTable(text, "t.toml"), o);
  } catch (const TableError& e) {
    return e.what();
  }
  return "";
}

TEST(SimgridExport, ClusterSplitsB1OverTwoLinks) {
  SimgridPlatform p = ExportSimgrid(ParsePlatformTable(kBase, "t.toml"), {});
  EXPECT_EQ(p.nodes, 2);
  EXPECT_DOUBLE_EQ(p.link_bw_Bps, 30e6);
  EXPECT_DOUBLE_EQ(p.link_lat_s, 1e-5);
  EXPECT_DOUBLE_EQ(p.speed_flops, 1e8);
  EXPECT_NE(p.xml.find("bw=\"30000000Bps\" lat=\"1.0000000000000001e-05s\""), std::string::npos)
      << p.xml;
  EXPECT_EQ(p.xml.find("bb_bw"), std::string::npos);
  EXPECT_EQ(p.hostfile, "node-0\nnode-1\n");
  EXPECT_NE(p.cfg.find("--cfg=smpi/bw-factor:0:1\n"), std::string::npos);
  EXPECT_NE(p.cfg.find("--cfg=smpi/lat-factor:0:1\n"), std::string::npos);
}

TEST(SimgridExport, BackboneTakesItsLatencyOutOfB1) {
  std::string t = std::string(kBase) +
                  "[measures]\nbackbone_bw = { value = 1.25, unit = \"MB/s\" }\n"
                  "backbone_lat = { value = 4e-6, unit = \"s\" }\n";
  SimgridOptions o;
  o.nodes = 4;
  SimgridPlatform p = ExportSimgrid(ParsePlatformTable(t, "t.toml"), o);
  EXPECT_DOUBLE_EQ(p.backbone_bw_Bps, 1.25e6);
  EXPECT_DOUBLE_EQ(2 * p.link_lat_s + p.backbone_lat_s, 2e-5);
  EXPECT_NE(p.xml.find("bb_sharing_policy=\"SHARED\""), std::string::npos);
  EXPECT_EQ(p.hostfile, "node-0\nnode-1\nnode-2\nnode-3\n");
}

TEST(SimgridExport, FatTreeSplitsB1OverTheLongestRoute) {
  SimgridOptions o;
  o.topology = "fat-tree";
  o.fat_tree = "2;4,2;1,2;1,1";
  SimgridPlatform p = ExportSimgrid(ParsePlatformTable(kBase, "t.toml"), o);
  EXPECT_EQ(p.nodes, 8);
  EXPECT_DOUBLE_EQ(p.link_lat_s, 5e-6);
  EXPECT_NE(p.xml.find("topology=\"FAT_TREE\" topo_parameters=\"2;4,2;1,2;1,1\""),
            std::string::npos);
  o.nodes = 4;
  EXPECT_NE(ErrorOf(kBase, o).find("has 8 hosts"), std::string::npos);
  o.nodes = 0;
  o.fat_tree = "2;4;1,2;1,1";
  EXPECT_NE(ErrorOf(kBase, o).find("each list needs LEVELS numbers"), std::string::npos);
}

TEST(SimgridExport, SpeedFallsBackToTheMeasuredRate) {
  std::string t =
      "schema = 1\nname = \"t\"\n[parameters]\na1 = { value = 3, unit = \"MB/s\" }\n"
      "b1 = { value = 1e-4, unit = \"s\" }\n[measures]\n"
      "mflops_adjusted = { value = 102, unit = \"MFlop/s\" }\n";
  SimgridPlatform p = ExportSimgrid(ParsePlatformTable(t, "t.toml"), {});
  EXPECT_DOUBLE_EQ(p.speed_flops, 102e6);
}

TEST(SimgridExport, RefusesNamingTheField) {
  std::string no_a1 = kBase;
  no_a1.erase(no_a1.find("a1 ="), no_a1.find("b1 =") - no_a1.find("a1 ="));
  EXPECT_NE(ErrorOf(no_a1).find("t.toml: parameters.a1"), std::string::npos) << ErrorOf(no_a1);
  std::string no_b1 = kBase;
  no_b1.erase(no_b1.find("b1 ="), no_b1.find("a3 =") - no_b1.find("b1 ="));
  EXPECT_NE(ErrorOf(no_b1).find("parameters.b1"), std::string::npos);
  std::string no_speed = kBase;
  no_speed.erase(no_speed.find("a3 ="));
  EXPECT_NE(ErrorOf(no_speed).find("parameters.a3 (or measures.mflops_adjusted)"),
            std::string::npos);
  std::string kbps = kBase;
  kbps.replace(kbps.find("\"MB/s\""), 6, "\"kB/s\"");
  EXPECT_NE(ErrorOf(kbps).find("parameters.a1 has unit 'kB/s'"), std::string::npos);
  std::string slow_bb = std::string(kBase) +
                        "[measures]\nbackbone_bw = { value = 1, unit = \"MB/s\" }\n"
                        "backbone_lat = { value = 1e-3, unit = \"s\" }\n";
  EXPECT_NE(ErrorOf(slow_bb).find("exceeds parameters.b1"), std::string::npos);
}

TEST(SimgridExport, TableKeysAreValidated) {
  auto parse_error = [](const std::string& text) {
    try {
      ParsePlatformTable(text, "t.toml");
    } catch (const TableError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(parse_error(std::string(kBase) + "").find(""), std::string::npos);
  std::string bad_topo = std::string("topology = \"torus\"\n") + kBase;
  EXPECT_NE(parse_error(bad_topo).find("t.toml:1:12: topology must be"), std::string::npos)
      << parse_error(bad_topo);
  EXPECT_NE(parse_error(std::string(kBase) +
                        "[measures]\nbackbone_bw = { value = 10, unit = \"Mbit/s\" }\n")
                .find("measures.backbone_bw must have unit \"MB/s\""),
            std::string::npos);
  PlatformTable t = ParsePlatformTable(std::string("topology = \"fat-tree\"\n") + kBase, "t");
  EXPECT_EQ(t.topology, "fat-tree");
  EXPECT_EQ(ParsePlatformTable(FormatPlatformTable(t), "again").topology, "fat-tree");
}

}  // namespace
}  // namespace invmw::fit
