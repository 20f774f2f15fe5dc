#include "fitter/plot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace invmw::fit {
namespace {

// Two process counts x two sizes, two replications each; t_comm missing in one run.
DataTable Measurements() {
  DataTable t;
  t.source = "m.csv";
  t.columns = {"p", "n", "t_par_comp", "t_comm", "t_wall"};
  t.rows = {{1, 100, 4.0, 0.5, 4.6}, {1, 100, 6.0, 0.7, 6.8}, {2, 100, 2.0, 1.0, 3.1},
            {2, 100, 3.0, NAN, 3.9}, {1, 900, 40, 1, 41},     {2, 900, 20, 2, 22.5}};
  t.lines = {2, 3, 4, 5, 6, 7};
  return t;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const PlotError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Plot, BreakdownAveragesTheRunsOfEachBar) {
  BreakdownData d = BreakdownFromTable(Measurements(), "p", {{"n", 100}}, {}, "t_wall");
  ASSERT_EQ(d.components, (std::vector<std::string>{"t_par_comp", "t_comm"}));
  ASSERT_EQ(d.x, (std::vector<double>{1, 2}));
  EXPECT_DOUBLE_EQ(d.values[0][0], 5.0);
  EXPECT_DOUBLE_EQ(d.values[0][1], 0.6);
  EXPECT_DOUBLE_EQ(d.values[1][0], 2.5);
  EXPECT_DOUBLE_EQ(d.values[1][1], 1.0);  // the run without t_comm does not count as zero
  EXPECT_DOUBLE_EQ(d.total[1], 3.5);
  EXPECT_EQ(d.runs, (std::vector<int>{2, 2}));
  EXPECT_EQ(BreakdownDat(d), "# p t_par_comp t_comm t_wall runs\n1 5 0.6 5.7 2\n2 2.5 1 3.5 2\n");
  std::string gp = BreakdownScript(d, "fig", {"svg", "pngcairo"});
  EXPECT_NE(gp.find("set style histogram rowstacked"), std::string::npos);
  EXPECT_NE(gp.find("plot 'fig.dat' using 2:xtic(1) title 't_par_comp'"), std::string::npos);
  EXPECT_NE(gp.find("'' using 3 title 't_comm'"), std::string::npos);
  EXPECT_NE(gp.find("'' using 0:4 with points"), std::string::npos);
  EXPECT_NE(gp.find("set output 'fig.svg'"), std::string::npos);
  EXPECT_NE(gp.find("set terminal pngcairo"), std::string::npos);
  EXPECT_NE(gp.find("set output 'fig.png'"), std::string::npos);
}

TEST(Plot, BreakdownRefusesToMixDesignPoints) {
  std::string e = ErrorOf([] { BreakdownFromTable(Measurements(), "p", {}, {}, "t_wall"); });
  EXPECT_NE(e.find("rows with p = 1 differ in factor 'n' (100, 900); choose one with --where "
                   "n=VALUE"),
            std::string::npos)
      << e;
  e = ErrorOf([] { BreakdownFromTable(Measurements(), "q", {}, {}, ""); });
  EXPECT_NE(e.find("no column 'q'"), std::string::npos) << e;
  e = ErrorOf([] { BreakdownFromTable(Measurements(), "p", {{"n", 5}}, {}, ""); });
  EXPECT_NE(e.find("no rows left"), std::string::npos) << e;
}

TEST(Plot, BreakdownFromPrediction) {
  nlohmann::json j = nlohmann::json::parse(R"({"model":"opal","sweep":"p","platforms":[
    {"platform":"a","points":[{"p":1,"time":3,"speedup":1,"t_comm":1,"t_par_comp":2},
                              {"p":2,"time":2.5,"speedup":1.2,"t_comm":1.5,"t_par_comp":1}]},
    {"platform":"b","points":[{"p":1,"time":9,"speedup":1,"t_comm":1,"t_par_comp":8}]}]})");
  BreakdownData d = BreakdownFromPrediction(j, "a", "pred.json");
  EXPECT_EQ(d.components, (std::vector<std::string>{"t_comm", "t_par_comp"}));
  EXPECT_EQ(BreakdownDat(d), "# p t_comm t_par_comp time runs\n1 1 2 3 0\n2 1.5 1 2.5 0\n");
  std::string e = ErrorOf([&] { BreakdownFromPrediction(j, "", "pred.json"); });
  EXPECT_NE(e.find("several platforms (a, b)"), std::string::npos) << e;
  e = ErrorOf([&] { BreakdownFromPrediction(j, "c", "pred.json"); });
  EXPECT_NE(e.find("no platform 'c' (have: a, b)"), std::string::npos) << e;
}

TEST(Plot, MeasuredPredictedGroupsReplicationsOfAPoint) {
  nlohmann::json j = nlohmann::json::parse(R"({"model":"opal","data":"db",
    "responses":[{"name":"t_opal","column":"t_wall"},{"name":"t_comm","column":"t_comm"},
                 {"name":"all","column":"all"}],
    "residuals":[
      {"point":0,"response":"t_opal","measured":10,"predicted":10.5,"factors":{"p":1,"n":5}},
      {"point":0,"response":"t_opal","measured":12,"predicted":10.5,"factors":{"p":1,"n":5}},
      {"point":0,"response":"t_comm","measured":1,"predicted":1,"factors":{"p":1,"n":5}},
      {"point":1,"response":"t_opal","measured":6,"predicted":6.6,"factors":{"p":2,"n":5}}]})");
  MeasuredPredictedData d = MeasuredPredictedFromFit(j, "t_wall", "fit.json");
  EXPECT_EQ(d.response, "t_opal");
  ASSERT_EQ(d.labels, (std::vector<std::string>{"p=1", "p=2"}));  // n does not vary
  EXPECT_EQ(MeasuredPredictedDat(d),
            "# index label t_opal_measured_mean t_opal_measured_min t_opal_measured_max "
            "t_opal_predicted error_percent runs\n"
            "0 \"p=1\" 11 10 12 10.5 -4.54545455 2\n1 \"p=2\" 6 6 6 6.6 10 1\n");
  EXPECT_EQ(MeasuredPredictedFromFit(j, "", "fit.json").response, "t_opal");
  EXPECT_EQ(MeasuredPredictedFromFit(j, "t_comm", "fit.json").measured_mean,
            (std::vector<double>{1}));
  std::string e = ErrorOf([&] { MeasuredPredictedFromFit(j, "t_sync", "fit.json"); });
  EXPECT_NE(e.find("no response 't_sync' (have: t_opal (t_wall), t_comm (t_comm))"),
            std::string::npos)
      << e;
  e = ErrorOf([] { MeasuredPredictedFromFit(nlohmann::json::object(), "", "x.json"); });
  EXPECT_NE(e.find("x.json: no field 'responses' (expected the output of `invmw fit --json`)"),
            std::string::npos)
      << e;
}

// A results database's absolute path would be cut off at the title's width: titles name the
// file by its base name (with the design and platform), the full path is in fit.json.
TEST(Plot, TitlesNameTheDataByItsBaseName) {
  DataTable t = Measurements();
  t.source = "/srv/very/long/build/directory/experiments/results.db design opal-84 platform emu-a";
  BreakdownData b = BreakdownFromTable(t, "p", {{"n", 100}}, {}, "t_wall");
  EXPECT_EQ(b.title, "time breakdown, results.db design opal-84 platform emu-a, n=100");
  EXPECT_EQ(b.title.find('/'), std::string::npos) << b.title;
  nlohmann::json j = nlohmann::json::parse(R"({"model":"opal",
    "data":"/srv/very/long/build/directory/testdata/opal_small.csv",
    "responses":[{"name":"t_opal","column":"t_wall"}],
    "residuals":[{"point":0,"response":"t_opal","measured":10,"predicted":10.5,
                  "factors":{"p":1}}]})");
  MeasuredPredictedData m = MeasuredPredictedFromFit(j, "", "fit.json");
  EXPECT_EQ(m.title, "measured vs predicted t_opal, model opal, opal_small.csv");
  EXPECT_EQ(m.title.find("/srv"), std::string::npos) << m.title;
}

TEST(Plot, PredictionTimeAndSpeedupSideBySide) {
  nlohmann::json j = nlohmann::json::parse(R"({"model":"opal","sweep":"p","platforms":[
    {"platform":"a","points":[{"p":1,"time":4,"speedup":1},{"p":2,"time":2,"speedup":2}]},
    {"platform":"b","points":[{"p":1,"time":8,"speedup":1},{"p":2,"time":5,"speedup":1.6}]}]})");
  PredictionPlotData d = PredictionFromJson(j, "pred.json");
  EXPECT_EQ(PredictionDat(d), "# p time:a speedup:a time:b speedup:b\n1 4 1 8 1\n2 2 2 5 1.6\n");
  std::string gp = PredictionScript(d, "pred", {"svg"});
  EXPECT_NE(gp.find("names = 'a b'"), std::string::npos);
  EXPECT_NE(gp.find("set multiplot layout 1,2"), std::string::npos);
  EXPECT_NE(gp.find("using 1:(column(2*i+1))"), std::string::npos);
  j["platforms"][1]["points"][1]["p"] = 3;
  std::string e = ErrorOf([&] { PredictionFromJson(j, "pred.json"); });
  EXPECT_NE(e.find("platform b was predicted over other sweep values than a"), std::string::npos)
      << e;
}

TEST(Plot, UnknownFormatIsAnError) {
  std::string e = ErrorOf([] { Terminals({"svg", "jpeg"}); });
  EXPECT_NE(e.find("unknown image format 'jpeg' (expected svg or png)"), std::string::npos) << e;
}

}  // namespace
}  // namespace invmw::fit
