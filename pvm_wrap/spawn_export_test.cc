// Unit tests of the pieces of the PVM support that need no daemon.
#include "pvm_wrap/export_list.h"

#include <gtest/gtest.h>

namespace invmw::pvm {
namespace {

TEST(MergeExportList, AddsMissingNamesOnce) {
  EXPECT_EQ(MergeExportList("", "LD_PRELOAD:INVMW_OUTPUT_DIR"), "LD_PRELOAD:INVMW_OUTPUT_DIR");
  EXPECT_EQ(MergeExportList("DISPLAY", "LD_PRELOAD"), "DISPLAY:LD_PRELOAD");
  EXPECT_EQ(MergeExportList("LD_PRELOAD:DISPLAY", "LD_PRELOAD:X"), "LD_PRELOAD:DISPLAY:X");
}

TEST(MergeExportList, PrefixIsNotAMatch) {
  EXPECT_EQ(MergeExportList("LD_PRELOAD_X", "LD_PRELOAD"), "LD_PRELOAD_X:LD_PRELOAD");
  EXPECT_EQ(MergeExportList("A::B", "B:"), "A::B");
}

}  // namespace
}  // namespace invmw::pvm
