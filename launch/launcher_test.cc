// srun's command line (SlurmArgv): LD_PRELOAD alone in --export, merged into the user's own
// --export (srun honours only the last one), whatever else the command holds left in place.
#include "launch/launcher.h"

#include <gtest/gtest.h>

namespace invmw::launch {
namespace {

const RankVars kVars = {{"LD_PRELOAD", "/l/libinvmw.so"}, {"INVMW_OUTPUT_DIR", "/o"}};

TEST(SlurmArgv, PreloadAloneInExport) {
  EXPECT_EQ(SlurmArgv({"srun", "-n", "4", "/bin/true", "--export=x"}, kVars),
            (std::vector<std::string>{"srun", "--export=ALL,LD_PRELOAD=/l/libinvmw.so", "-n", "4",
                                      "/bin/true", "--export=x"}));
}

TEST(SlurmArgv, MergedIntoTheUsersExport) {
  EXPECT_EQ(SlurmArgv({"srun", "-n", "2", "--export=ALL,A=1", "/bin/true"}, kVars),
            (std::vector<std::string>{"srun", "-n", "2",
                                      "--export=ALL,A=1,LD_PRELOAD=/l/libinvmw.so,INVMW_OUTPUT_DIR",
                                      "/bin/true"}));
  EXPECT_EQ(SlurmArgv({"srun", "--export", "NONE", "/bin/true"}, kVars),
            (std::vector<std::string>{"srun", "--export=LD_PRELOAD=/l/libinvmw.so,INVMW_OUTPUT_DIR",
                                      "/bin/true"}));
}

TEST(SlurmArgv, CommaInThePreloadIsRefused) {
  EXPECT_EQ(SlurmExportProblem(kVars), "");
  EXPECT_NE(SlurmExportProblem({{"LD_PRELOAD", "/a,b/libinvmw.so"}}), "");
}

}  // namespace
}  // namespace invmw::launch
