// Transfer of searched models (issue 21 items 1 and 2): data generated from a known platform
// table, searched, written as a model file and a measured table, then predicted on the measured
// table and on another table and compared with the generating formula.
#include "fitter/model_transfer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fitter/model.h"
#include "fitter/predict.h"

namespace invmw::fit {
namespace {

struct Machine {
  double a1, b1, a3;  // MB/s, s, s
};

// The application: computation a3 * 5e4 * n^2 / p plus a start-up 0.01 s that no machine
// changes; communication of 4 p messages and 2400 n p bytes per run.
double Messages(double p, double) {
  return 4 * p;
}
double Bytes(double p, double n) {
  return 2400 * n * p;
}
double Comp(const Machine& m, double p, double n) {
  return 0.01 + m.a3 * 5e4 * n * n / p;
}
double Comm(const Machine& m, double p, double n) {
  return m.b1 * Messages(p, n) + Bytes(p, n) / (m.a1 * 1e6);
}

DataTable Generate(const Machine& m, double noise, unsigned seed) {
  DataTable d;
  d.source = "generated";
  d.columns = {"p", "n", "t_wall", "t_comp", "t_comm", "bytes", "messages"};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  for (double p : {2, 4, 8, 16, 32})
    for (double n : {2, 4, 8, 16, 32})
      for (int rep = 0; rep < 3; ++rep) {
        double tc = Comp(m, p, n) * (1 + u(rng)), tm = Comm(m, p, n) * (1 + u(rng));
        d.rows.push_back({p, n, tc + tm, tc, tm, Bytes(p, n), Messages(p, n)});
      }
  return d;
}

PlatformTable Table(const std::string& name, const Machine& m) {
  PlatformTable t;
  t.name = name;
  t.path = name + ".toml";
  t.parameters = {
      {"a1", m.a1, "MB/s", "test"}, {"b1", m.b1, "s", "test"}, {"a3", m.a3, "s", "test"}};
  return t;
}

struct Searched {
  std::vector<SearchResult> results;
  TransferSpec spec;
  CommRates rates;
};

Searched Search(const DataTable& d) {
  Searched s;
  for (const char* r : {"t_wall", "t_comp", "t_comm", "bytes", "messages"})
    s.results.push_back(SearchModel(d, r, {"p", "n"}, SearchOptions()));
  s.spec.compute = {"t_comp"};
  s.spec.comm = "t_comm";
  s.spec.bytes = "bytes";
  s.spec.messages = "messages";
  s.rates = FitCommRates(d, "t_comm", "bytes", "messages");
  return s;
}

double Eval(const Model& m, const std::vector<double>& params, double p, double n, int resp) {
  std::vector<double> f(m.factors().size());
  f[m.FactorIndex("p")] = p;
  f[m.FactorIndex("n")] = n;
  return m.responses()[resp].expr.Eval<double>(f.data(), params.data());
}

TEST(ModelTransfer, RatesFromProfileColumns) {
  Machine gen{30, 1.5e-5, 1e-6};
  DataTable d = Generate(gen, 0.01, 7);
  CommRates r = FitCommRates(d, "t_comm", "bytes", "messages");
  EXPECT_NEAR(r.a1, 30, 30 * 0.03);
  EXPECT_NEAR(r.b1, 1.5e-5, 1.5e-5 * 0.05);
  EXPECT_GT(r.a1_std_error, 0);
  EXPECT_LT(r.rel_rms, 0.01);
  EXPECT_EQ(r.rows, 75);
  EXPECT_TRUE(r.note.empty()) << r.note;
}

TEST(ModelTransfer, PredictsMeasuredAndOtherMachine) {
  Machine gen{30, 1.5e-5, 1e-6};     // the machine the data came from
  Machine other{200, 4e-6, 2.5e-7};  // a faster one: 6.7x the rate, 4x the compute speed
  Searched s = Search(Generate(gen, 0.01, 11));
  // The search finds the generating terms of the computation and of the profile columns.
  EXPECT_EQ(TermText(s.results[1].selected.terms.back(), {"p", "n"}), "p^(-1) * n^2");
  EXPECT_EQ(TermText(s.results[4].selected.terms.back(), {"p", "n"}), "p");
  PlatformTable gen_table = Table("gen", gen);
  std::string text = TransferModelToml(s.results, s.spec, &s.rates, "searched", "test");
  Model m = Model::Parse(text, "searched.toml");
  PlatformTable measured =
      ParsePlatformTable(FormatPlatformTable(MeasuredTable(s.results, s.spec, &s.rates, &gen_table,
                                                           "measured", "generated")),
                         "measured.toml");
  // The compute coefficient transfers with a3, the rest is kept or taken from the tables.
  int c = m.ParamIndex("t_comp_c1");
  ASSERT_GE(c, 0) << text;
  EXPECT_EQ(m.parameters()[c].transfer, "compute");
  EXPECT_EQ(m.parameters()[c].scale_kernel, "a3");
  EXPECT_EQ(m.ParamIndex("t_comp_c0"), -1);      // the start-up is the application's: a number
  EXPECT_EQ(m.parameters().size(), 3u) << text;  // t_comp_c1, a1, b1
  ASSERT_NE(measured.Parameter("a1"), nullptr);
  ASSERT_NE(measured.Parameter("t_comp_c1"), nullptr);
  EXPECT_EQ(measured.Parameter("a3")->value, 1e-6);
  ASSERT_EQ(m.responses().size(), 3u);  // total = t_comp + t_comm
  EXPECT_EQ(m.total().column, "t_wall");

  ResolvedParameters here = ResolveParameters(m, measured, nullptr);
  PlatformTable other_table = Table("other", other);
  ResolvedParameters there = ResolveParameters(m, other_table, &measured);
  EXPECT_TRUE(there.notes.empty()) << there.notes[0];
  // Inside the design and beyond it (p = 64, n = 64).
  for (auto [p, n] : {std::pair<double, double>{4, 8}, {16, 32}, {32, 2}, {64, 64}}) {
    double want_here = Comp(gen, p, n) + Comm(gen, p, n);
    double want_there = Comp(other, p, n) + Comm(other, p, n);
    EXPECT_NEAR(Eval(m, here.values, p, n, 0), want_here, 0.03 * want_here) << p << " " << n;
    EXPECT_NEAR(Eval(m, there.values, p, n, 0), want_there, 0.03 * want_there) << p << " " << n;
    EXPECT_NEAR(Eval(m, there.values, p, n, 1), Comp(other, p, n), 0.03 * Comp(other, p, n));
    EXPECT_NEAR(Eval(m, there.values, p, n, 2), Comm(other, p, n), 0.03 * Comm(other, p, n));
  }
  // Without a reference the other table lacks the searched coefficients: a clear error.
  try {
    ResolveParameters(m, other_table, nullptr);
    ADD_FAILURE() << "no error";
  } catch (const PredictError& e) {
    EXPECT_NE(std::string(e.what()).find("no parameter 't_comp_c1'"), std::string::npos)
        << e.what();
  }
}

TEST(ModelTransfer, WithoutMachineTableComputeStaysUnscaled) {
  Machine gen{30, 1.5e-5, 1e-6};
  Searched s = Search(Generate(gen, 0.01, 3));
  Model m = Model::Parse(TransferModelToml(s.results, s.spec, &s.rates, "x", "y"), "x.toml");
  PlatformTable measured = MeasuredTable(s.results, s.spec, &s.rates, nullptr, "m", "generated");
  EXPECT_EQ(measured.Parameter("a3"), nullptr);
  ResolvedParameters r = ResolveParameters(m, Table("other", {200, 4e-6, 2.5e-7}), &measured);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("keeps the reference value"), std::string::npos) << r.notes[0];
}

TEST(ModelTransfer, BadSpecs) {
  Machine gen{30, 1.5e-5, 1e-6};
  DataTable d = Generate(gen, 0.01, 5);
  Searched s = Search(d);
  auto expect = [&](TransferSpec spec, const std::string& part) {
    try {
      TransferModelToml(s.results, spec, &s.rates, "x", "y");
      ADD_FAILURE() << "no error, expected '" << part << "'";
    } catch (const SearchError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  TransferSpec bad = s.spec;
  bad.compute = {"t_cpu"};
  expect(bad, "--compute 't_cpu' is not one of the --response names");
  bad = s.spec;
  bad.compute.push_back("t_comm");
  expect(bad, "is both --compute and --comm");
  try {
    FitCommRates(d, "t_comm", "bytes", "msgs");
    ADD_FAILURE() << "no error";
  } catch (const SearchError& e) {
    EXPECT_NE(std::string(e.what()).find("no column 'msgs'"), std::string::npos) << e.what();
  }
  DataTable neg = d;
  neg.rows[4][5] = -1;
  try {
    FitCommRates(neg, "t_comm", "bytes", "messages");
    ADD_FAILURE() << "no error";
  } catch (const SearchError& e) {
    EXPECT_NE(std::string(e.what()).find("'bytes' = -1"), std::string::npos) << e.what();
  }
  DataTable zero = d;  // a zero time: an error naming the row; a missing one: left out
  zero.rows[2][4] = 0;
  try {
    FitCommRates(zero, "t_comm", "bytes", "messages");
    ADD_FAILURE() << "no error";
  } catch (const SearchError& e) {
    EXPECT_NE(std::string(e.what()).find("'t_comm' = 0"), std::string::npos) << e.what();
  }
  DataTable few = d;  // fewer rows than the rate fit needs
  for (size_t r = 2; r < few.rows.size(); ++r) few.rows[r][4] = NAN;
  try {
    FitCommRates(few, "t_comm", "bytes", "messages");
    ADD_FAILURE() << "no error";
  } catch (const SearchError& e) {
    EXPECT_NE(std::string(e.what()).find("2 row(s) have"), std::string::npos) << e.what();
  }
  DataTable nan = d;
  nan.rows[0][4] = NAN;
  EXPECT_EQ(FitCommRates(nan, "t_comm", "bytes", "messages").rows, 74);
}

}  // namespace
}  // namespace invmw::fit
