// The ELF dependency reader on real binaries (an MPI program built here, system programs), a
// script, garbage, and damaged copies of a real binary.
#include "common/elf_deps.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace invmw::elf {
namespace {

// The files the tests made, removed at exit.
struct Made {
  std::vector<std::string> paths;
  ~Made() {
    for (const auto& p : paths) unlink(p.c_str());
  }
} made;

std::string TempFile(const std::string& name, const std::string& content, bool exec = false) {
  std::string p = ::testing::TempDir() + "/elf-" + std::to_string(getpid()) + "-" + name;
  made.paths.push_back(p);
  std::ofstream(p, std::ios::binary) << content;
  if (exec) chmod(p.c_str(), 0755);
  return p;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool Has(const std::vector<std::string>& v, const std::string& prefix) {
  return std::any_of(v.begin(), v.end(),
                     [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}

TEST(ElfDeps, MpiProgramNeedsLibmpiAndItsDependenciesResolve) {
  DynamicInfo d = ReadDynamic(INVMW_TEST_MPI_PROGRAM);
  ASSERT_EQ(d.kind, Kind::kDynamic) << d.error;
  EXPECT_TRUE(Has(d.needed, "libmpi")) << "DT_NEEDED of " << INVMW_TEST_MPI_PROGRAM;
  EXPECT_TRUE(Has(d.needed, "libc.so"));
  std::vector<std::string> names;
  for (const auto& dep : ResolveDependencies(INVMW_TEST_MPI_PROGRAM)) {
    names.push_back(dep.name);
    if (dep.name.rfind("libmpi", 0) == 0 || dep.name.rfind("libc.so", 0) == 0) {
      EXPECT_FALSE(dep.path.empty()) << dep.name << " not found";
    }
    if (!dep.path.empty()) {
      EXPECT_EQ(access(dep.path.c_str(), R_OK), 0) << dep.path;
    }
  }
  EXPECT_TRUE(Has(names, "libmpi"));
#if INVMW_TEST_OPENMPI
  // Only through libmpi (transitive): Open MPI's runtime libraries.
  EXPECT_FALSE(Has(d.needed, "libopen-pal"));
  EXPECT_TRUE(Has(names, "libopen-pal"));
#endif
}

#ifdef INVMW_TEST_MPICH_PROGRAM
TEST(ElfDeps, MpichProgramNeedsLibmpich) {
  DynamicInfo d = ReadDynamic(INVMW_TEST_MPICH_PROGRAM);
  ASSERT_EQ(d.kind, Kind::kDynamic) << d.error;
  EXPECT_TRUE(Has(d.needed, "libmpich")) << "DT_NEEDED of " << INVMW_TEST_MPICH_PROGRAM;
  for (const auto& dep : ResolveDependencies(INVMW_TEST_MPICH_PROGRAM))
    EXPECT_NE(dep.name.rfind("libmpi.so.40", 0), 0u) << "Open MPI's library in an MPICH program";
}
#endif

TEST(ElfDeps, NonMpiProgram) {
  DynamicInfo d = ReadDynamic("/bin/true");
  ASSERT_EQ(d.kind, Kind::kDynamic) << d.error;
  EXPECT_TRUE(Has(d.needed, "libc.so"));
  std::vector<Dependency> deps = ResolveDependencies("/bin/true");
  ASSERT_FALSE(deps.empty());
  for (const auto& dep : deps) {
    EXPECT_EQ(dep.name.find("libmpi"), std::string::npos);
    EXPECT_FALSE(dep.path.empty()) << dep.name;
  }
}

TEST(ElfDeps, StaticProgramNeedsNothing) {
  // Debian's ldconfig is static (static-pie: a dynamic section without DT_NEEDED).
  if (access("/sbin/ldconfig", R_OK) != 0) GTEST_SKIP() << "no /sbin/ldconfig";
  DynamicInfo d = ReadDynamic("/sbin/ldconfig");
  EXPECT_TRUE(d.kind == Kind::kStatic || d.kind == Kind::kDynamic) << d.error;
  EXPECT_TRUE(d.needed.empty());
  EXPECT_TRUE(ResolveDependencies("/sbin/ldconfig").empty());
}

TEST(ElfDeps, ScriptEmptyGarbageAndMissingFiles) {
  EXPECT_EQ(ReadDynamic(TempFile("script", "#!/bin/sh\necho hi\n", true)).kind, Kind::kNotElf);
  EXPECT_EQ(ReadDynamic(TempFile("empty", "")).kind, Kind::kNotElf);
  std::mt19937 rng(7);
  std::string garbage(4096, '\0');
  for (auto& c : garbage) c = char(rng());
  EXPECT_EQ(ReadDynamic(TempFile("garbage", garbage)).kind, Kind::kNotElf);
  // ELF magic followed by garbage: not a crash, and not a dynamic file.
  garbage.replace(0, 4,
                  "\x7f"
                  "ELF");
  Kind k = ReadDynamic(TempFile("elfgarbage", garbage)).kind;
  EXPECT_NE(k, Kind::kDynamic);
  EXPECT_EQ(ReadDynamic(TempFile("magiconly",
                                 "\x7f"
                                 "ELF"))
                .kind,
            Kind::kUnsupported);
  DynamicInfo missing = ReadDynamic("/nonexistent/program");
  EXPECT_EQ(missing.kind, Kind::kUnreadable);
  EXPECT_NE(missing.error.find("/nonexistent/program"), std::string::npos);
  EXPECT_EQ(ReadDynamic("/tmp").kind, Kind::kUnreadable);
  EXPECT_TRUE(ResolveDependencies("/nonexistent/program").empty());
}

TEST(ElfDeps, DamagedCopiesOfARealBinaryNeverCrash) {
  const std::string real = Slurp(INVMW_TEST_MPI_PROGRAM);
  ASSERT_GT(real.size(), 4096u);
  // Truncated at every header boundary region.
  for (size_t n :
       {size_t(16), size_t(63), size_t(64), size_t(100), size_t(1000), real.size() / 2}) {
    DynamicInfo d = ReadDynamic(TempFile("trunc", real.substr(0, n)));
    EXPECT_NE(d.kind, Kind::kUnreadable) << n;
  }
  // Bytes of the first 4 KiB (ELF header, program headers, usually the dynamic section's
  // strings) overwritten at random: whatever comes out, the reader returns.
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::string copy = real;
    for (int k = 0; k < 8; ++k) copy[rng() % 4096] = char(rng());
    DynamicInfo d = ReadDynamic(TempFile("mutant", copy));
    for (const auto& n : d.needed) EXPECT_LT(n.size(), kMaxStringTable);
  }
  // Header fields pointing far outside the file.
  std::string bad = real;
  const uint64_t far = ~uint64_t(0) - 8;
  bad.replace(32, 8, reinterpret_cast<const char*>(&far), 8);  // e_phoff
  EXPECT_EQ(ReadDynamic(TempFile("farphoff", bad)).kind, Kind::kMalformed);
}

}  // namespace
}  // namespace invmw::elf
