#include "fitter/derive.h"

#include <gtest/gtest.h>

namespace invmw::fit {
namespace {

DataTable Opal() {
  DataTable d;
  d.source = "runs";
  d.columns = {"rc", "n"};
  d.rows = {{0, 1000}, {10, 2000}};
  return d;
}

TEST(Derive, ComputesColumnsRowByRowInOrder) {
  DataTable d = Opal();
  AddDerivedColumns(
      &d, {"nt = if(rc > 0, 4/3*3.141592653589793*rc^3*0.0334, 1e9)", "s=10", "half=nt/2"});
  ASSERT_EQ(d.columns, (std::vector<std::string>{"rc", "n", "nt", "s", "half"}));
  EXPECT_DOUBLE_EQ(d.rows[0][2], 1e9);
  EXPECT_NEAR(d.rows[1][2], 139.9, 0.05);  // about 140 neighbours at 10 Angstrom
  EXPECT_DOUBLE_EQ(d.rows[1][3], 10);
  EXPECT_DOUBLE_EQ(d.rows[1][4], d.rows[1][2] / 2);
}

TEST(Derive, ErrorsNameTheItem) {
  DataTable d = Opal();
  try {
    AddDerivedColumns(&d, {"nt=rcc*2"});
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("--derive nt: column 1 ('rcc')"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(AddDerivedColumns(&d, {"n=2"}), DataError);          // hides a recorded column
  EXPECT_THROW(AddDerivedColumns(&d, {"=2"}), DataError);           // no name
  EXPECT_THROW(AddDerivedColumns(&d, {"x=1/(rc-rc)"}), DataError);  // not finite
}

}  // namespace
}  // namespace invmw::fit
