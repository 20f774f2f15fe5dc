// Slurm platform files: what they turn into (sbatch's argument vector) and the errors for bad
// ones (file, line, field, what was expected).
#include "experiments/runner/slurm_platform.h"

#include <gtest/gtest.h>

#include <fstream>

namespace invmw::experiment {
namespace {

const char kGood[] = R"(kind = "slurm"
name = "c"
description = "d"
partition = "compute"
account = "proj"
time_limit = "1-02:03:04"
nodes = 2
ntasks_per_node = 4
sbatch_options = ["--exclusive"]
srun_options = ["--mpi=pmix"]
)";

TEST(SlurmPlatform, SbatchArgvCarriesEveryField) {
  SlurmPlatform p = ParseSlurmPlatform(kGood, "c.toml");
  auto a = SbatchArgv(p, "job", "/r/d", 8, "/r/d/s.sh", {"invmw", "run", "--", "srun", "a b"});
  std::vector<std::string> want = {"sbatch",
                                   "--parsable",
                                   "--job-name=job",
                                   "--chdir=/r/d",
                                   "--output=/r/d/runner.log",
                                   "--ntasks=8",
                                   "--partition=compute",
                                   "--account=proj",
                                   "--time=1-02:03:04",
                                   "--nodes=2",
                                   "--ntasks-per-node=4",
                                   "--exclusive",
                                   "/r/d/s.sh",
                                   "",
                                   "/r/d",
                                   "invmw",
                                   "run",
                                   "--",
                                   "srun",
                                   "a b"};
  EXPECT_EQ(a, want);
  EXPECT_EQ(p.srun_options, std::vector<std::string>{"--mpi=pmix"});
}

TEST(SlurmPlatform, TimeFormats) {
  for (const char* ok : {"5", "05:30", "01:00:00", "2-0", "2-12:30", "2-12:30:00"})
    EXPECT_TRUE(ValidSlurmTime(ok)) << ok;
  for (const char* bad : {"", "1h", "1:2:3:4", "-5", "1-", "a-1", "1:", "10m"})
    EXPECT_FALSE(ValidSlurmTime(bad)) << bad;
}

void ExpectError(const std::string& text, const std::string& what) {
  try {
    ParseSlurmPlatform(text, "p.toml");
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(SlurmPlatform, BadFilesNameFileLineAndField) {
  const std::string head = "kind = \"slurm\"\nname = \"c\"\ndescription = \"d\"\n";
  ExpectError(head + "time_limit = \"1h\"\n", "p.toml:4: 'time_limit' is '1h'");
  ExpectError(head + "nodes = 0\n", "p.toml:4: 'nodes' must be an integer");
  ExpectError(head + "sbatch_options = [\"rm -rf /\"]\n", "p.toml:4: 'sbatch_options'");
  ExpectError(head + "partition = 3\n", "p.toml:4: 'partition' must be a string");
  ExpectError(head + "node_local_dir = \"/tmp\"\n", "'node_local_dir' needs nodes = 1");
  ExpectError(head + "node_local_dir = \"tmp\"\nnodes = 1\n", "must be an absolute path");
  ExpectError(head + "partitions = \"x\"\n", "p.toml:4: unknown key 'partitions'");
  ExpectError("kind = \"emulated\"\nname = \"c\"\ndescription = \"d\"\n",
              "p.toml:1: 'kind' must be \"slurm\"");
  ExpectError("kind = \"slurm\"\ndescription = \"d\"\n", "missing 'name'");
  ExpectError(head + "account = \"a\nb\"\n", "p.toml");
}

TEST(SlurmPlatform, TimeSeconds) {
  EXPECT_EQ(SlurmTimeSeconds("5"), 300);
  EXPECT_EQ(SlurmTimeSeconds("0:07"), 7);
  EXPECT_EQ(SlurmTimeSeconds("1:02:03"), 3723);
  EXPECT_EQ(SlurmTimeSeconds("2-3"), 2 * 86400 + 3 * 3600);
  EXPECT_EQ(SlurmTimeSeconds("1-02:03"), 86400 + 2 * 3600 + 3 * 60);
  EXPECT_EQ(SlurmTimeSeconds("1-02:03:04"), 86400 + 2 * 3600 + 3 * 60 + 4);
  EXPECT_EQ(SlurmTimeSeconds("UNLIMITED"), -1);
  EXPECT_EQ(SlurmTimeSeconds(""), -1);
}

// The design's timeout bounds the job's --time when it is shorter than the platform's limit.
TEST(SlurmPlatform, JobTimeLimitTakesTheShorter) {
  EXPECT_EQ(JobTimeLimit("00:10:00", 60), "0-00:01:00");
  EXPECT_EQ(JobTimeLimit("00:10:00", 61), "0-00:02:00");  // whole minutes, rounded up
  EXPECT_EQ(JobTimeLimit("00:10:00", 3), "0-00:01:00");
  EXPECT_EQ(JobTimeLimit("00:10:00", 600), "00:10:00");
  EXPECT_EQ(JobTimeLimit("5", 3600), "5");
  EXPECT_EQ(JobTimeLimit("", 600), "0-00:10:00");
  EXPECT_EQ(JobTimeLimit("", 1e6), "11-13:47:00");
}

}  // namespace
}  // namespace invmw::experiment
