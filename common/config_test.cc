#include "common/config.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <map>
#include <string>

namespace invmw::config {
namespace {

std::map<std::string, std::string> g_env;
const char* Lookup(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

TEST(Config, DefaultsApplyWhenUnset) {
  g_env.clear();
  Config c = Load(Lookup);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_FALSE(c.TRACE_ENABLE);
  EXPECT_DOUBLE_EQ(c.TRACE_DRAIN_INTERVAL, 0.020);
  EXPECT_EQ(c.TRACE_BUFFER, 4ull << 20);
  EXPECT_EQ(c.effective.size(), Variables().size());
}

TEST(Config, ParsesEveryType) {
  g_env = {{"INVMW_TRACE_ENABLE", "yes"},
           {"INVMW_TRACE_DRAIN_INTERVAL", "250us"},
           {"INVMW_TRACE_BUFFER", "512K"},
           {"INVMW_WRAP_EXCLUDE", "MPI_Iprobe, MPI_Test,"},
           {"INVMW_WRAP_MAX_THREADS", "8"}};
  Config c = Load(Lookup);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_TRUE(c.TRACE_ENABLE);
  EXPECT_DOUBLE_EQ(c.TRACE_DRAIN_INTERVAL, 250e-6);
  EXPECT_EQ(c.TRACE_BUFFER, 512u * 1024);
  ASSERT_EQ(c.WRAP_EXCLUDE.size(), 2u);
  EXPECT_EQ(c.WRAP_EXCLUDE[1], "MPI_Test");
  EXPECT_EQ(c.WRAP_MAX_THREADS, 8);
}

TEST(Config, BadValueWarnsAndKeepsDefault) {
  g_env = {{"INVMW_TRACE_DRAIN_INTERVAL", "fast"}, {"INVMW_TRACE_ENABLE", "maybe"}};
  Config c = Load(Lookup);
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_NE(c.warnings[0].find("INVMW_TRACE_ENABLE=maybe"), std::string::npos);
  EXPECT_NE(c.warnings[1].find("duration"), std::string::npos);
  EXPECT_DOUBLE_EQ(c.TRACE_DRAIN_INTERVAL, 0.020);
  EXPECT_FALSE(c.TRACE_ENABLE);
}

TEST(Config, DurationAndSizeRejectGarbage) {
  double d;
  uint64_t s;
  EXPECT_FALSE(ParseDuration("-1ms", &d));
  EXPECT_FALSE(ParseDuration("10 parsecs", &d));
  EXPECT_TRUE(ParseDuration("2", &d));
  EXPECT_DOUBLE_EQ(d, 2.0);
  EXPECT_FALSE(ParseSize("12Q", &s));
  EXPECT_TRUE(ParseSize("1G", &s));
  EXPECT_EQ(s, 1ull << 30);
}

TEST(Config, Ports) {
  int p = -1;
  EXPECT_TRUE(ParsePort("47800", &p));
  EXPECT_EQ(p, 47800);
  EXPECT_TRUE(ParsePort("0", &p));
  EXPECT_EQ(p, 0);
  for (const char* bad : {"", "99999", "65536", "-1", "12a", " 80", "+80"})
    EXPECT_FALSE(ParsePort(bad, &p)) << bad;
}

// Each variable says which parts read it, by their folders in the source tree, so a reader that
// moves or disappears is noticed here.
TEST(Config, EveryVariableNamesItsReaders) {
  for (const VarInfo& v : Variables()) {
    const std::string readers = v.readers;
    ASSERT_FALSE(readers.empty()) << v.name;
    size_t begin = 0;
    while (begin < readers.size()) {
      size_t end = readers.find(", ", begin);
      if (end == std::string::npos) end = readers.size();
      std::string item = readers.substr(begin, end - begin);
      const std::string part = item.substr(0, item.find(" ("));
      begin = end + 2;
      if (part == "none") {  // only set for the record, by invmw itself
        EXPECT_EQ(v.use, Use::Internal) << v.name;
        continue;
      }
      const std::string dir = std::string(INVMW_SOURCE_DIR) + "/" + part;
      struct stat st {};
      EXPECT_TRUE(stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
          << v.name << " names reader '" << part << "', which is no folder of the source tree";
    }
  }
}

// Test-only variables are marked in the registry, named INVMW_<PART>_TEST_*, and say so first in
// their description (which is all that `invmw config list` shows); variables that invmw sets for
// the processes it starts say who sets them.
TEST(Config, TestOnlyAndInternalVariablesAreMarked) {
  size_t test_only = 0;
  for (const VarInfo& v : Variables()) {
    const std::string name = v.name, desc = v.description;
    const bool named_test = name.find("_TEST_") != std::string::npos;
    const bool says_test = desc.rfind("Test only: ", 0) == 0;
    EXPECT_EQ(v.use == Use::TestOnly, named_test) << name;
    EXPECT_EQ(v.use == Use::TestOnly, says_test) << name;
    EXPECT_EQ(v.use == Use::Internal, desc.rfind("Set by `invmw ", 0) == 0) << name;
    test_only += v.use == Use::TestOnly;
  }
  // INVMW_TRACE_TEST_SKEW, _TEST_NO_WRITER, _TEST_PARALLEL_FAIL, INVMW_SAMPLER_TEST_DROP_EVERY,
  // INVMW_WRAP_TEST_CALLSITE_KILL, INVMW_PROFILE_TEST_TREE_FAIL
  EXPECT_EQ(test_only, 6u);
  EXPECT_STREQ(UseName(Use::TestOnly), "test only");
}

}  // namespace
}  // namespace invmw::config
