#include "fitter/platform_table.h"

#include <gtest/gtest.h>

namespace invmw::fit {
namespace {

TEST(PlatformTable, ThePaperPlatformsShip) {
  std::vector<std::string> names = ListPlatformTables("");
  EXPECT_EQ(names, (std::vector<std::string>{"cray-j90", "cray-t3e-900", "fast-cops", "slow-cops",
                                             "smp-cops"}));
  struct Expect {
    const char* name;
    double mbs, latency, mflops, adjusted;
  };
  const Expect kTable[] = {{"cray-t3e-900", 100, 12e-6, 85, 52},
                           {"cray-j90", 3, 10e-3, 80, 80},
                           {"slow-cops", 3, 10e-3, 32, 50},
                           {"smp-cops", 15, 25e-6, 65, 100},
                           {"fast-cops", 30, 15e-6, 67, 102}};
  for (const Expect& e : kTable) {
    PlatformTable t = LoadPlatformTable(ResolvePlatformTable(e.name, ""));
    EXPECT_EQ(t.name, e.name);
    ASSERT_NE(t.Parameter("a1"), nullptr);
    EXPECT_DOUBLE_EQ(t.Parameter("a1")->value, e.mbs);
    EXPECT_DOUBLE_EQ(t.Parameter("b1")->value, e.latency);
    EXPECT_DOUBLE_EQ(t.Parameter("b5")->value, e.latency);
    EXPECT_DOUBLE_EQ(t.Measure("mflops")->value, e.mflops);
    EXPECT_DOUBLE_EQ(t.Measure("mflops_adjusted")->value, e.adjusted);
    // The stated flop-count assumptions: 10, 100, 100 flops at the adjusted rate.
    EXPECT_NEAR(t.Parameter("a2")->value, 10 / (e.adjusted * 1e6), 1e-5 * 10 / (e.adjusted * 1e6));
    EXPECT_NEAR(t.Parameter("a3")->value, 100 / (e.adjusted * 1e6),
                1e-5 * 100 / (e.adjusted * 1e6));
    EXPECT_NEAR(t.Parameter("a4")->value, 100 / (e.adjusted * 1e6),
                1e-5 * 100 / (e.adjusted * 1e6));
    for (const auto& v : t.parameters) EXPECT_FALSE(v.source.empty()) << e.name << " " << v.name;
    for (const auto& v : t.parameters) EXPECT_FALSE(v.unit.empty()) << e.name << " " << v.name;
  }
}

TEST(PlatformTable, RoundTrip) {
  PlatformTable t;
  t.name = "mine";
  t.title = "My \"cluster\"";
  t.parameters = {{"a1", 123.5, "MB/s", "fit of x", 1.5}, {"b1", 2e-6, "s", "", -1}};
  t.kernels = {{"a2", 1.25e-9, "s", "probe", -1}};
  PlatformTable u = ParsePlatformTable(FormatPlatformTable(t), "mine.toml");
  EXPECT_EQ(u.title, t.title);
  ASSERT_EQ(u.parameters.size(), 2u);
  EXPECT_DOUBLE_EQ(u.Parameter("a1")->value, 123.5);
  EXPECT_DOUBLE_EQ(u.Parameter("a1")->std_error, 1.5);
  EXPECT_LT(u.Parameter("b1")->std_error, 0);
  EXPECT_DOUBLE_EQ(u.Kernel("a2")->value, 1.25e-9);
}

TEST(PlatformTable, Errors) {
  auto err = [](const std::string& text) {
    try {
      ParsePlatformTable(text, "t.toml");
    } catch (const TableError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("name = \"x\"\n").find("missing 'schema'"), std::string::npos);
  EXPECT_NE(err("schema = 2\nname = \"x\"\n").find("t.toml:1:10: schema 2 is not supported"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[parameters]\na1 = { unit = \"MB/s\" }\n")
                .find("t.toml:4:6: parameters.a1 lacks 'value'"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\ncolour = 1\n").find("unknown key 'colour'"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[parameters]\na1 = { value = -30, unit = \"MB/s\" }\n")
                .find("t.toml:4:6: parameters.a1 = -30: must be >= 0"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[parameters]\na1 = { value = 0, unit = \"MB/s\" }\n")
                .find("a rate must be > 0"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[kernels]\nk = { value = \"fast\" }\n")
                .find("kernels.k.value must be a number, not a string"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[parameters]\nb1 = inf\n").find("finite"),
            std::string::npos);
  EXPECT_EQ(err("schema = 1\nname = \"x\"\n[parameters]\nb5 = 0\n"), "");  // a zero time
  // Issue 16, item 13: a zero compute rate or kernel time silently zeroed a2..a4 in transfer.
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[measures]\nmflops_adjusted = { value = 0, unit = "
                "\"MFlop/s\" }\n")
                .find("t.toml:4:19: measures.mflops_adjusted = 0 MFlop/s: a rate must be > 0"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[measures]\nmflops_adjusted = -3\n")
                .find("measures.mflops_adjusted = -3: a rate must be > 0"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[measures]\nmflops_adjusted = nan\n").find("finite"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[kernels]\na2 = 0\n")
                .find("kernels.a2 = 0: a kernel time must be > 0"),
            std::string::npos);
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[parameters]\na2 = { value = 1, std_error = nan }\n")
                .find("parameters.a2.std_error must be a finite number >= 0"),
            std::string::npos);
  EXPECT_EQ(err("schema = 1\nname = \"x\"\n[measures]\nlatency = { value = 0, unit = \"s\" }\n"),
            "");  // not a rate
  EXPECT_NE(err("schema = 1\nname = \"x\"\n[measures]\nlatency = { value = -1e-6, unit = \"s\" }\n")
                .find("measures.latency = -1e-06 s: a time must be >= 0"),
            std::string::npos);
  EXPECT_THROW(ResolvePlatformTable("no-such-platform", ""), TableError);
}

}  // namespace
}  // namespace invmw::fit
