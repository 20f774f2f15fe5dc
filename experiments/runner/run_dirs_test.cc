// Run directories: names that may become path components, the ownership marker, and that
// removal reaches only what the runner made, never through a symbolic link.
#include "experiments/runner/run_dirs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace invmw::experiment {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/invmw-run-dirs-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }  // remove_all never follows the planted links
  std::string path;
};

void Touch(const std::string& p) {
  std::ofstream(p) << "x\n";
}

TEST(RunDirs, Names) {
  for (const char* ok : {"local", "emu-4x50-shm", "smoke", "v1.2_x", "..a", "a.."})
    EXPECT_EQ(CheckPathName(ok), "") << ok;
  for (const char* bad : {"", ".", "..", "/abs", "../x", "a/b", "a b", "a\\b", "x\n"})
    EXPECT_NE(CheckPathName(bad), "") << bad;
  EXPECT_NE(CheckPathName(std::string(129, 'a')), "");
}

TEST(RunDirs, MadeDirectoriesCarryTheMarkerAndResetRemovesThem) {
  TempDir t;
  std::string runs = t.path + "/runs";
  std::string dir = MakeRunDir(runs, "d", "local", "p0-r0");
  EXPECT_EQ(dir, runs + "/d/local/p0-r0");
  for (const std::string& p : {runs + "/d", runs + "/d/local", dir})
    EXPECT_TRUE(fs::is_regular_file(p + "/" + kOwnerMarker)) << p;
  EXPECT_FALSE(fs::exists(runs + "/" + kOwnerMarker));  // the root is the user's
  fs::create_directories(dir + "/trace/sub");
  Touch(dir + "/trace/sub/f");
  MakeRunDir(runs, "d", "local", "p1-r0");
  MakeRunDir(runs, "d", "other", "p0-r0");
  // A retry of a marked run directory empties it.
  EXPECT_EQ(MakeRunDir(runs, "d", "local", "p0-r0"), dir);
  EXPECT_FALSE(fs::exists(dir + "/trace"));
  EXPECT_TRUE(fs::exists(dir + "/" + kOwnerMarker));

  RemoveReport r = RemoveRunDirs(runs, "d", "local");
  EXPECT_EQ(r.removed, 2);
  EXPECT_TRUE(r.kept.empty());
  EXPECT_FALSE(fs::exists(runs + "/d/local"));
  EXPECT_TRUE(fs::exists(runs + "/d/other/p0-r0"));  // other platforms stay
  r = RemoveRunDirs(runs, "d", "other");
  EXPECT_EQ(r.removed, 1);
  EXPECT_FALSE(fs::exists(runs + "/d"));  // empty and marked: gone too
  EXPECT_TRUE(fs::exists(runs));
  EXPECT_EQ(RemoveRunDirs(runs, "d", "local").removed, 0);  // nothing there: no error
}

TEST(RunDirs, UnmarkedDirectoriesAndLinksAreNeverDeleted) {
  TempDir t;
  std::string runs = t.path + "/runs", outside = t.path + "/outside";
  fs::create_directories(outside + "/deep");
  Touch(outside + "/deep/precious");
  Touch(outside + "/" + kOwnerMarker);  // even a marker behind a link is not trusted
  Touch(outside + "/deep/" + kOwnerMarker);

  // A platform directory made by hand: left alone, with everything in it.
  fs::create_directories(runs + "/d/byhand/p0-r0");
  Touch(runs + "/d/byhand/p0-r0/data");
  RemoveReport r = RemoveRunDirs(runs, "d", "byhand");
  EXPECT_EQ(r.removed, 0);
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_NE(r.kept[0].find("no " + std::string(kOwnerMarker)), std::string::npos) << r.kept[0];
  EXPECT_TRUE(fs::exists(runs + "/d/byhand/p0-r0/data"));

  // Links planted at the platform level and inside a marked platform directory.
  fs::create_symlink(outside, runs + "/d/linked");
  r = RemoveRunDirs(runs, "d", "linked");
  EXPECT_EQ(r.removed, 0);
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_NE(r.kept[0].find("symbolic link"), std::string::npos) << r.kept[0];
  MakeRunDir(runs, "d", "local", "p0-r0");
  fs::create_symlink(outside + "/deep", runs + "/d/local/p1-r0");
  fs::create_directories(runs + "/d/local/p2-r0");  // unmarked run directory
  Touch(runs + "/d/local/p2-r0/keep");
  fs::create_symlink(outside, runs + "/d/local/p0-r0/escape");  // inside a marked run dir
  r = RemoveRunDirs(runs, "d", "local");
  EXPECT_EQ(r.removed, 1);
  EXPECT_EQ(r.kept.size(), 2u);
  EXPECT_FALSE(fs::exists(runs + "/d/local/p0-r0"));
  EXPECT_TRUE(fs::is_symlink(runs + "/d/local/p1-r0"));
  EXPECT_TRUE(fs::exists(runs + "/d/local/p2-r0/keep"));
  EXPECT_TRUE(fs::exists(runs + "/d/local"));  // not empty: stays, with its marker
  EXPECT_TRUE(fs::exists(runs + "/d/local/" + kOwnerMarker));
  EXPECT_TRUE(fs::exists(outside + "/deep/precious"));
  EXPECT_TRUE(fs::exists(outside + "/" + kOwnerMarker));

  // The design level as a link: not followed by the runner either.
  fs::create_symlink(outside, runs + "/e");
  EXPECT_EQ(RemoveRunDirs(runs, "e", "deep").removed, 0);
  EXPECT_THROW(MakeRunDir(runs, "e", "deep", "p0-r0"), std::runtime_error);
  EXPECT_TRUE(fs::exists(outside + "/deep/precious"));
  EXPECT_FALSE(fs::exists(outside + "/deep/p0-r0"));

  // A retry never empties a run directory the runner did not make.
  fs::create_directories(runs + "/f/local/p0-r0");
  Touch(runs + "/f/local/p0-r0/precious");
  try {
    MakeRunDir(runs, "f", "local", "p0-r0");
    ADD_FAILURE() << "an unmarked run directory was reused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("was not made by the runner"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::exists(runs + "/f/local/p0-r0/precious"));
  fs::create_directories(runs + "/f/local/p1-r0");  // empty: adopted (nothing to lose)
  EXPECT_NO_THROW(MakeRunDir(runs, "f", "local", "p1-r0"));
  fs::create_symlink(outside, runs + "/f/local/p2-r0");
  EXPECT_THROW(MakeRunDir(runs, "f", "local", "p2-r0"), std::runtime_error);

  // Names that are not names never reach the file system.
  for (const char* bad : {"..", "../..", "/abs", "a/b", "."}) {
    EXPECT_THROW(RemoveRunDirs(runs, "d", bad), std::runtime_error) << bad;
    EXPECT_THROW(RemoveRunDirs(runs, bad, "local"), std::runtime_error) << bad;
    EXPECT_THROW(MakeRunDir(runs, "d", bad, "p0-r0"), std::runtime_error) << bad;
  }
  EXPECT_TRUE(fs::exists(outside + "/deep/precious"));
}

}  // namespace
}  // namespace invmw::experiment
