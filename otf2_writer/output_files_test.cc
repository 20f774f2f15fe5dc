// Writing archives and exports: a failure (here RLIMIT_FSIZE, as a full disk would) is an error
// with the path named and leaves the previous output intact; an export never overwrites the
// archive it reads.
#include "otf2_writer/output_files.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "otf2_writer/converter.h"
#include "otf2_writer/tests/synthetic_run.h"
#include "otf2_reader/trace_check.h"
#include "otf2_reader/trace_reader.h"

namespace invmw::otf2 {
namespace {
namespace fs = std::filesystem;

struct Child {
  bool exited = false;  // false: killed by a signal
  int status = -1;      // exit status, or the signal
  std::string output;   // stdout and stderr
};

// Runs argv (no shell) with RLIMIT_FSIZE set to fsize bytes (unless negative); output is read
// through a pipe, which the limit does not apply to.
Child RunChild(const std::vector<std::string>& argv, long fsize = -1) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    if (fsize >= 0) {
      struct rlimit rl;
      getrlimit(RLIMIT_FSIZE, &rl);
      rl.rlim_cur = rlim_t(fsize);
      setrlimit(RLIMIT_FSIZE, &rl);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  Child c;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) c.output.append(buf, size_t(n));
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  c.exited = WIFEXITED(st);
  c.status = c.exited ? WEXITSTATUS(st) : WTERMSIG(st);
  return c;
}

std::string Describe(const Child& c) {
  return (c.exited ? "exit " : "signal ") + std::to_string(c.status) + ": " + c.output;
}

class ArchiveOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("invmw-out-" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
             std::to_string(getpid())))
               .string();
    fs::remove_all(dir_);
    expected_ = testing::WriteSyntheticRun(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  uint64_t Events(const std::string& anchor) {
    Trace t = ReadTrace(anchor);
    uint64_t n = 0;
    for (const auto& l : t.locations) n += l.events.size();
    Trace defs = ReadTraceDefinitions(anchor);
    EXPECT_TRUE(CheckTraceStreaming(&defs).ok);
    return n;
  }
  // Entries of dir_ left by a writer (temporary archives or files).
  std::vector<std::string> Leftovers() {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string n = e.path().filename().string();
      if (n.find(".writing-") != std::string::npos || n.find(".old-") != std::string::npos ||
          n.find(".tmp-") != std::string::npos)
        v.push_back(n);
    }
    return v;
  }
  std::string dir_;
  testing::Expected expected_;
};

TEST_F(ArchiveOutput, ConvertReplacesTheArchiveOnlyOnceComplete) {
  ConvertToOtf2(dir_);
  const std::string anchor = dir_ + "/traces.otf2";
  const uint64_t events = Events(anchor);
  ASSERT_GT(events, 0u);
  for (long limit : {0L, 512L}) {
    SCOPED_TRACE("RLIMIT_FSIZE " + std::to_string(limit));
    for (const char* verb : {"convert", "recover"}) {
      // Before: the previous archive was deleted first, and the process died of SIGXFSZ.
      const Child c = RunChild({INVMW_BIN, "trace", verb, dir_}, limit);
      EXPECT_TRUE(c.exited) << Describe(c);
      EXPECT_NE(c.status, 0) << Describe(c);
      EXPECT_NE(c.output.find(anchor + ": not written"), std::string::npos) << Describe(c);
      EXPECT_NE(c.output.find("previous archive is unchanged"), std::string::npos) << c.output;
      EXPECT_EQ(Events(anchor), events);
      EXPECT_EQ(RunChild({INVMW_OTF2_PRINT, anchor}).status, 0);
      EXPECT_TRUE(Leftovers().empty()) << ::testing::PrintToString(Leftovers());
    }
  }
  // Without the limit the same command replaces it.
  const Child ok = RunChild({INVMW_BIN, "trace", "convert", dir_});
  EXPECT_EQ(ok.status, 0) << Describe(ok);
  EXPECT_EQ(Events(anchor), events);
  EXPECT_TRUE(Leftovers().empty()) << ::testing::PrintToString(Leftovers());
}

TEST_F(ArchiveOutput, ConverterThrowsNamingThePathAndRestoresSigxfsz) {
  const std::string anchor = dir_ + "/traces.otf2";
  // In-process, as in the preload runtime: SIGXFSZ must not end the process.
  struct rlimit old;
  getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit low = old;
  low.rlim_cur = 0;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &low), 0);
  std::string what;
  try {
    ConvertToOtf2(dir_);
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_NE(what.find(anchor + ": not written"), std::string::npos) << what;
  EXPECT_FALSE(fs::exists(anchor));
  EXPECT_TRUE(Leftovers().empty()) << ::testing::PrintToString(Leftovers());
  struct sigaction sa;
  sigaction(SIGXFSZ, nullptr, &sa);
  EXPECT_EQ(sa.sa_handler, SIG_DFL);
}

// `invmw run` passes the job's exit status on whatever happens to invmw's own output, and does
// not print the path of a trace it could not write.
TEST_F(ArchiveOutput, RunReportsATraceItCouldNotWrite) {
  // invmw run refuses a directory of an earlier run: the job itself leaves the raw files there,
  // as ranks that die before the end would (as hard links: the file size limit is the job's
  // too).
  const std::string src = dir_ + "-src";
  fs::rename(dir_, src);
  fs::create_directory(dir_);
  struct RemoveSrc {
    std::string p;
    ~RemoveSrc() { fs::remove_all(p); }
  } remove_src{src};
  const std::vector<std::string> job = {"/bin/sh", "-c", "cp -Rl \"$1\"/. \"$2\"/ && exit 3",
                                        "sh",      src,  dir_};
  std::vector<std::string> argv = {INVMW_BIN,         "run",   "--mpi", "openmpi", "--lib",
                                   INVMW_PRELOAD_LIB, "--out", dir_,    "--"};
  argv.insert(argv.end(), job.begin(), job.end());
  const Child c = RunChild(argv, 0);
  EXPECT_TRUE(c.exited) << Describe(c);
  EXPECT_EQ(c.status, 3) << Describe(c);
  EXPECT_NE(c.output.find("the trace was not written"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find("recovered the trace"), std::string::npos) << c.output;
  EXPECT_EQ(c.output.find("trace: " + dir_ + "/traces.otf2\n"), std::string::npos) << c.output;
  EXPECT_FALSE(fs::exists(dir_ + "/traces.otf2"));

  // With room to write, the same run (replacing the first one's files) builds the archive and
  // names it.
  argv.insert(argv.begin() + 2, "--force");
  const Child ok = RunChild(argv);
  EXPECT_EQ(ok.status, 3) << Describe(ok);
  EXPECT_NE(ok.output.find("recovered the trace of the failed job: " + dir_ + "/traces.otf2"),
            std::string::npos)
      << ok.output;
}

TEST_F(ArchiveOutput, ExportRefusesToOverwriteItsInput) {
  ConvertToOtf2(dir_);
  const std::string anchor = dir_ + "/traces.otf2";
  const uint64_t events = Events(anchor);
  fs::create_hard_link(anchor, dir_ + "/anchor-link.json");
  fs::create_directory(dir_ + "/sub");
  std::string loc_file;
  for (const auto& e : fs::directory_iterator(dir_ + "/traces")) loc_file = e.path().string();
  for (const std::string& out :
       {anchor, dir_ + "/traces.def", dir_ + "/sub/../traces.otf2", dir_ + "/traces",
        dir_ + "/traces/new.json", loc_file, dir_ + "/anchor-link.json"}) {
    const Child c =
        RunChild({INVMW_BIN, "trace", "export", "--format", "perfetto", "-o", out, dir_});
    EXPECT_EQ(c.status, 2) << out << ": " << Describe(c);
    EXPECT_NE(c.output.find("a file of the trace being exported"), std::string::npos)
        << out << ": " << c.output;
    EXPECT_EQ(Events(anchor), events) << out;
  }
  const Child ok = RunChild({INVMW_BIN, "trace", "export", "-o", dir_ + "/p.json", anchor});
  EXPECT_EQ(ok.status, 0) << Describe(ok);
  EXPECT_TRUE(fs::exists(dir_ + "/p.json"));
  EXPECT_TRUE(Leftovers().empty()) << ::testing::PrintToString(Leftovers());
}

TEST_F(ArchiveOutput, FailedExportKeepsThePreviousFile) {
  ConvertToOtf2(dir_);
  const std::string out = dir_ + "/p.json";
  std::ofstream(out) << "previous export\n";
  const Child c = RunChild({INVMW_BIN, "trace", "export", "-o", out, dir_}, 1024);
  EXPECT_TRUE(c.exited) << Describe(c);  // before: killed by SIGXFSZ, p.json truncated
  EXPECT_EQ(c.status, 2) << Describe(c);
  EXPECT_NE(c.output.find(out + ": not written"), std::string::npos) << c.output;
  std::ifstream in(out);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(s, "previous export\n");
  EXPECT_TRUE(Leftovers().empty()) << ::testing::PrintToString(Leftovers());
}

TEST(TempArchive, ReplacesAllThreeEntriesOrNothing) {
  const std::string dir =
      (fs::temp_directory_path() / ("invmw-tmparchive-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/a.otf2") << "old anchor";
  std::ofstream(dir + "/a.def") << "old defs";
  fs::create_directory(dir + "/a");
  std::ofstream(dir + "/a/0.evt") << "old events";
  {
    TempArchive t(dir, "a");
    EXPECT_EQ(t.name().rfind(".a.writing-", 0), 0u) << t.name();
    std::ofstream(dir + "/" + t.name() + ".otf2") << "new anchor";
    fs::create_directory(dir + "/" + t.name());
    std::ofstream(dir + "/" + t.name() + "/1.evt") << "new events";
    EXPECT_EQ(t.Replace(), "");
  }
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    names.push_back(fs::relative(e.path(), dir).string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "a.otf2", "a/1.evt"}));
  {
    TempArchive t(dir, "a");  // not replaced: removed with what it wrote
    std::ofstream(dir + "/" + t.name() + ".otf2") << "abandoned";
  }
  names.clear();
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "a.otf2"}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace invmw::otf2
