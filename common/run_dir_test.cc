#include "common/run_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace invmw {
namespace {

class RunDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/invmw-run-dir-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/run";
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
    sentinel_ = root_ + "/sentinel";
    Write(sentinel_, "sentinel");
  }
  void TearDown() override {
    // Only what the test made: a fixed, known tree under its own mkdtemp directory.
    for (const char* sub : {"run/raw", "run/traces", "run/other", "run"}) {
      const std::string d = root_ + "/" + sub;
      if (DIR* dd = opendir(d.c_str())) {
        while (dirent* e = readdir(dd))
          if (e->d_name[0] != '.') unlink((d + "/" + e->d_name).c_str());
        closedir(dd);
      }
    }
    for (const char* sub : {"run/raw", "run/traces", "run/other", "run"})
      rmdir((root_ + "/" + sub).c_str());
    unlink(sentinel_.c_str());
    rmdir(root_.c_str());
  }
  static void Write(const std::string& p, const std::string& s) { std::ofstream(p) << s; }
  static std::string Read(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static bool Exists(const std::string& p) {
    struct stat st;
    return lstat(p.c_str(), &st) == 0;
  }
  std::string root_, dir_, sentinel_;
};

TEST_F(RunDirTest, CreateNewFileNeverFollowsOrReplaces) {
  const std::string link = dir_ + "/rank-000000.bin";
  ASSERT_EQ(symlink(sentinel_.c_str(), link.c_str()), 0);
  EXPECT_LT(CreateNewFile(link), 0);
  EXPECT_EQ(errno, EEXIST);
  const std::string file = dir_ + "/defs-000000.jsonl";
  Write(file, "theirs");
  EXPECT_LT(CreateNewFile(file), 0);
  EXPECT_EQ(Read(file), "theirs");
  EXPECT_EQ(Read(sentinel_), "sentinel");
  const int fd = CreateNewFile(dir_ + "/new.bin");
  ASSERT_GE(fd, 0);
  close(fd);
}

TEST_F(RunDirTest, PublishNewFileKeepsAnExistingEntry) {
  const std::string path = dir_ + "/profile.json", tmp = dir_ + "/profile.json.tmp.1";
  ASSERT_EQ(symlink(sentinel_.c_str(), path.c_str()), 0);
  Write(tmp, "ours");
  EXPECT_FALSE(PublishNewFile(tmp, path));
  EXPECT_EQ(errno, EEXIST);
  EXPECT_FALSE(Exists(tmp)) << "the temporary is removed";
  EXPECT_EQ(Read(sentinel_), "sentinel");
  unlink(path.c_str());
  Write(tmp, "ours");
  EXPECT_TRUE(PublishNewFile(tmp, path));
  EXPECT_EQ(Read(path), "ours");
  EXPECT_FALSE(Exists(tmp));
}

TEST_F(RunDirTest, EarlierRunIsRecognisedByAnyMarker) {
  EXPECT_TRUE(EarlierRunEntries(dir_).empty());
  Write(dir_ + "/notes.txt", "x");
  Write(dir_ + "/profile.txt", "x");
  EXPECT_TRUE(EarlierRunEntries(dir_).empty()) << "neither is a marker";
  ASSERT_EQ(symlink(sentinel_.c_str(), (dir_ + "/meta.json").c_str()), 0);
  ASSERT_EQ(mkdir((dir_ + "/traces").c_str(), 0755), 0);
  EXPECT_EQ(EarlierRunEntries(dir_), (std::vector<std::string>{"meta.json", "traces"}));
}

TEST_F(RunDirTest, ReplacementRemovesOnlyInvmwFiles) {
  ASSERT_EQ(mkdir((dir_ + "/raw").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir_ + "/traces").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir_ + "/other").c_str(), 0755), 0);
  for (const char* f : {"meta.json", "profile.json", "profile.txt", "traces.otf2", "traces.def",
                        "raw/rank-000000.bin", "raw/events-000001-002.bin", "raw/defs-000001.jsonl",
                        "raw/metrics-000000.jsonl", "raw/samples-000000.bin",
                        "raw/resources-000000.json", "raw/resources-000000.json.tmp.77",
                        "traces/0.evt", "traces/4503599627370496.def", "notes.txt", "other/keep"})
    Write(dir_ + "/" + f, f);
  // A link named like a rank file goes; what it points to stays.
  ASSERT_EQ(symlink(sentinel_.c_str(), (dir_ + "/raw/rank-000001.bin").c_str()), 0);
  std::string err;
  ASSERT_TRUE(RemoveEarlierRun(dir_, &err)) << err;
  EXPECT_TRUE(EarlierRunEntries(dir_).empty());
  EXPECT_FALSE(Exists(dir_ + "/profile.txt"));
  EXPECT_FALSE(Exists(dir_ + "/traces.def"));
  EXPECT_EQ(Read(dir_ + "/notes.txt"), "notes.txt");
  EXPECT_EQ(Read(dir_ + "/other/keep"), "other/keep");
  EXPECT_EQ(Read(sentinel_), "sentinel");
}

// The call-site files (callsites/rank-N.txt, and live-N.bin of a rank killed before
// MPI_Finalize) go with the run, so the next run can create its own; a file of the user there
// stops the replacement.
TEST_F(RunDirTest, ReplacementRemovesCallSiteFiles) {
  ASSERT_EQ(mkdir((dir_ + "/raw").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir_ + "/callsites").c_str(), 0755), 0);
  for (const char* f : {"meta.json", "raw/rank-000000.bin", "callsites/rank-000000.txt",
                        "callsites/rank-000001.txt", "callsites/live-000001.bin"})
    Write(dir_ + "/" + f, f);
  std::string err;
  ASSERT_TRUE(RemoveEarlierRun(dir_, &err)) << err;
  EXPECT_FALSE(Exists(dir_ + "/callsites"));
  ASSERT_EQ(mkdir((dir_ + "/callsites").c_str(), 0755), 0);
  Write(dir_ + "/callsites/rank-000000.txt", "r");
  Write(dir_ + "/callsites/mine.txt", "mine");
  Write(dir_ + "/callsites/live-000001.txt", "not a live table name");
  EXPECT_FALSE(RemoveEarlierRun(dir_, &err));
  EXPECT_NE(err.find("callsites/mine.txt"), std::string::npos) << err;
  EXPECT_TRUE(Exists(dir_ + "/callsites/rank-000000.txt"));
}

TEST_F(RunDirTest, AForeignFileStopsTheReplacementBeforeAnythingIsRemoved) {
  ASSERT_EQ(mkdir((dir_ + "/raw").c_str(), 0755), 0);
  Write(dir_ + "/profile.json", "p");
  Write(dir_ + "/raw/rank-000000.bin", "r");
  Write(dir_ + "/raw/thesis.tex", "mine");
  std::string err;
  EXPECT_FALSE(RemoveEarlierRun(dir_, &err));
  EXPECT_NE(err.find("raw/thesis.tex"), std::string::npos) << err;
  EXPECT_TRUE(Exists(dir_ + "/profile.json"));
  EXPECT_TRUE(Exists(dir_ + "/raw/rank-000000.bin"));
  EXPECT_EQ(Read(dir_ + "/raw/thesis.tex"), "mine");
}

TEST_F(RunDirTest, ALinkInPlaceOfRawIsNotEntered) {
  ASSERT_EQ(mkdir((dir_ + "/other").c_str(), 0755), 0);
  Write(dir_ + "/other/rank-000000.bin", "theirs");
  ASSERT_EQ(symlink((dir_ + "/other").c_str(), (dir_ + "/raw").c_str()), 0);
  std::string err;
  EXPECT_FALSE(RemoveEarlierRun(dir_, &err));
  EXPECT_NE(err.find("raw is not a directory"), std::string::npos) << err;
  EXPECT_EQ(Read(dir_ + "/other/rank-000000.bin"), "theirs");
  unlink((dir_ + "/raw").c_str());
}

}  // namespace
}  // namespace invmw
