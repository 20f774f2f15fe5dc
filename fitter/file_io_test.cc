#include "fitter/file_io.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace invmw::fit {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
    closedir(d);
  }
  return out;
}

class FileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/invmw-file-io-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const auto& n : List(dir_)) {
      std::string p = dir_ + "/" + n;
      struct stat st;
      if (stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        rmdir(p.c_str());
      else
        unlink(p.c_str());
    }
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(FileIo, WritesAndReplacesWholeFilesLeavingNoTemporary) {
  std::string p = dir_ + "/t.toml";
  WriteFileAtomic(p, "first\n");
  EXPECT_EQ(Read(p), "first\n");
  WriteFileAtomic(p, "second, longer\n");
  EXPECT_EQ(Read(p), "second, longer\n");
  EXPECT_EQ(List(dir_), std::vector<std::string>{"t.toml"});
}

TEST_F(FileIo, FailuresNameThePathAndLeaveTheTargetAlone) {
  // The rename cannot replace a directory: the error names it and no temporary file remains.
  std::string sub = dir_ + "/sub";
  ASSERT_EQ(mkdir(sub.c_str(), 0700), 0);
  try {
    WriteFileAtomic(sub, "x");
    FAIL() << "no error";
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).find(sub + ": cannot write: "), 0u) << e.what();
  }
  EXPECT_EQ(List(dir_), std::vector<std::string>{"sub"});
  EXPECT_TRUE(List(sub).empty());
  EXPECT_THROW(WriteFileAtomic(dir_ + "/no/such/dir/t.toml", "x"), FileError);
  EXPECT_THROW(WriteFileAtomic(dir_ + "/", "x"), FileError);
}

}  // namespace
}  // namespace invmw::fit
