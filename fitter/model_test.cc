#include "fitter/model.h"

#include <cmath>
#include <gtest/gtest.h>

#include "fitter/data_table.h"

namespace invmw::fit {
namespace {

std::string ErrorOf(const std::string& toml) {
  try {
    Model::Parse(toml, "bad.toml");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

const char* kHead = R"(name = "m"
[factors]
x = "x"
n = "n"
[parameters]
a = { initial = 1, lower = 0, upper = 10 }
b = { initial = 2, lower = 0, upper = 10 }
)";

TEST(Model, BuiltinsLoad) {
  for (const auto& name : BuiltinModels()) {
    Model m = Model::Load(ResolveModelPath(name));
    EXPECT_EQ(m.name(), name);
    EXPECT_FALSE(m.total().expr.empty());
  }
  Model opal = Model::Load(ResolveModelPath("opal"));
  ASSERT_EQ(opal.responses().size(), 5u);
  EXPECT_EQ(opal.total().column, "t_wall");
  EXPECT_EQ(opal.responses()[1].name, "t_par_comp");  // file order, not alphabetical
  EXPECT_EQ(opal.responses()[4].name, "t_sync");
  EXPECT_EQ(opal.parameters()[opal.ParamIndex("a2")].transfer, "compute");
  EXPECT_EQ(opal.parameters()[opal.ParamIndex("b1")].transfer, "table");
  EXPECT_TRUE(opal.factors()[opal.FactorIndex("g")].has_default);
  EXPECT_THROW(ResolveModelPath("no_such_model"), ModelError);
}

TEST(Model, OpalEvaluatesThePapersFormulas) {
  Model m = Model::Load(ResolveModelPath("opal"));
  // s p u n nt g alpha in file order
  std::vector<double> f(m.factors().size());
  auto set = [&](const char* n, double v) { f[m.FactorIndex(n)] = v; };
  set("s", 10), set("p", 4), set("u", 0.1), set("n", 1000), set("nt", 140), set("g", 0.1),
      set("alpha", 24);
  std::vector<double> p(m.parameters().size());
  auto par = [&](const char* n, double v) { p[m.ParamIndex(n)] = v; };
  par("a1", 100), par("b1", 2e-5), par("a2", 5e-9), par("a3", 5e-8), par("a4", 1e-6),
      par("b5", 2e-5);
  double s = 10, pp = 4, u = 0.1, n = 1000, nt = 140, g = 0.1;
  double upd = 5e-9 * s * u / pp * ((1 - 2 * g) * (1 - 2 * g) * n * n - (1 - 2 * g) * n) / 2;
  double nb = 5e-8 * s / pp * nt * n;  // n >= nt: cut-off effective
  double comm = s * (pp * (24 / 100e6) * (u + 2) * n + 2 * pp * 2e-5 * (u + 1));
  double sync = 2 * s * (u + 1) * 2e-5;
  double seq = 1e-6 * s * n;
  EXPECT_DOUBLE_EQ(m.responses()[1].expr.Eval<double>(f.data(), p.data()), upd + nb);
  EXPECT_DOUBLE_EQ(m.responses()[2].expr.Eval<double>(f.data(), p.data()), seq);
  EXPECT_DOUBLE_EQ(m.responses()[3].expr.Eval<double>(f.data(), p.data()), comm);
  EXPECT_DOUBLE_EQ(m.responses()[4].expr.Eval<double>(f.data(), p.data()), sync);
  EXPECT_NEAR(m.total().expr.Eval<double>(f.data(), p.data()), upd + nb + seq + comm + sync, 1e-15);
  set("nt", 1e6);  // no cut-off: all n(n-1)/2 pairs
  EXPECT_DOUBLE_EQ(m.responses()[1].expr.Eval<double>(f.data(), p.data()),
                   upd + 5e-8 * s / pp * n * (n - 1) / 2);
}

// opal_ranks (issue 20, item 4): opal with a barrier of b5 + b6 (p + 1), the other components
// opal's; on the simulated clusters SMPI's barrier grows by about 0.8 us per rank.
TEST(Model, OpalRanksBarrierGrowsWithTheRanks) {
  Model m = Model::Load(ResolveModelPath("opal_ranks"));
  Model o = Model::Load(ResolveModelPath("opal"));
  ASSERT_EQ(m.responses().size(), o.responses().size());
  std::vector<double> f(m.factors().size());
  auto set = [&](const char* n, double v) { f[m.FactorIndex(n)] = v; };
  set("s", 4), set("u", 1), set("n", 500), set("nt", 1e6), set("g", 0), set("alpha", 24);
  std::vector<double> p(m.parameters().size()), po(o.parameters().size());
  for (const char* n : {"a1", "b1", "a2", "a3", "a4", "b5"}) {
    double v = std::string(n) == "a1" ? 30 : 1e-6;
    p[m.ParamIndex(n)] = v;
    po[o.ParamIndex(n)] = v;
  }
  ASSERT_GE(m.ParamIndex("b6"), 0);
  p[m.ParamIndex("b6")] = 8e-7;
  for (double ranks : {2.0, 65.0}) {
    set("p", ranks - 1);
    std::vector<double> fo(o.factors().size());
    for (const auto& fac : o.factors()) fo[o.FactorIndex(fac.name)] = f[m.FactorIndex(fac.name)];
    EXPECT_DOUBLE_EQ(m.responses()[4].expr.Eval<double>(f.data(), p.data()),
                     2 * 4 * 2 * (1e-6 + 8e-7 * ranks));
    for (int r = 1; r < 4; ++r)  // t_par_comp, t_seq_comp, t_comm: opal's
      EXPECT_DOUBLE_EQ(m.responses()[r].expr.Eval<double>(f.data(), p.data()),
                       o.responses()[r].expr.Eval<double>(fo.data(), po.data()));
  }
}

// qc20 (issue 20, item 5): opal_quota's quota stall per synchronization is b7 x the expected
// longest of p waits for the next CFS period, T ((1 - q) - (1 - q^(p+1))/(p + 1)), counted for
// the ranks on cores with CPU to spare (rank r on core r mod cores; a core whose ranks' quotas
// add up to a whole core time-shares and does not throttle). On the quarter core (q = 0.25,
// 2 cores) the stall measured in plfA-D grows from p = 1 to p = 3 (4.4 -> 9 ms); the old law
// b7 (1 - (p + 1)/nodes) made it shrink (0.75 -> 0.5 of b7 with 8 nodes).
TEST(Model, OpalQuotaStallGrowsWithTheServersUntilTheCoresAreFull) {
  Model m = Model::Load(ResolveModelPath("opal_quota"));
  std::vector<double> f(m.factors().size());
  auto set = [&](const char* n, double v) { f[m.FactorIndex(n)] = v; };
  set("s", 10), set("u", 1), set("n", 500), set("nt", 1e6), set("g", 0), set("alpha", 24);
  std::vector<double> p(m.parameters().size());
  auto par = [&](const char* n, double v) { p[m.ParamIndex(n)] = v; };
  par("a1", 100), par("b1", 1e-6), par("a2", 5e-9), par("a3", 2e-8), par("a4", 1e-7),
      par("b5_loop", 1e-6), par("b7", 2), par("burst", 0), par("cpu_quota", 0.25),
      par("quota_period", 0.01), par("cores", 2);
  const auto& total = m.responses()[0];
  ASSERT_TRUE(total.is_total);
  const double syncs = 2 * 10 * (1 + 1);
  // The stall is what b7 adds to the total (sync20 splits it over t_sync, t_comm and the
  // total's idle share; its size is the law's).
  auto per_sync = [&](double servers) {
    set("p", servers);
    double b7 = p[m.ParamIndex("b7")];
    double with = total.expr.Eval<double>(f.data(), p.data());
    par("b7", 0);
    double without = total.expr.Eval<double>(f.data(), p.data());
    par("b7", b7);
    return (with - without) / syncs;
  };
  auto law = [](double q, double servers) {
    return 0.01 * ((1 - q) - (1 - std::pow(q, servers + 1)) / (servers + 1));
  };
  // Quarter core: 2 and 4 ranks leave half of each core idle, every rank can stall.
  EXPECT_NEAR(per_sync(1), 2 * law(0.25, 1), 1e-12);  // 5.625 ms
  EXPECT_NEAR(per_sync(3), 2 * law(0.25, 3), 1e-12);  // 10.02 ms
  EXPECT_GT(per_sync(3), 1.7 * per_sync(1));
  // Half core: p = 3 fills both cores (no stall); at p = 2 only rank 1, alone on core 1, can.
  par("cpu_quota", 0.5);
  EXPECT_NEAR(per_sync(1), 2 * law(0.5, 1), 1e-12);
  EXPECT_NEAR(per_sync(2), 2 * law(0.5, 2) / 3, 1e-12);
  EXPECT_NEAR(per_sync(3), 0, 1e-15);
  // No quota: no stall, whatever b7.
  par("cpu_quota", 0), par("quota_period", 0);
  EXPECT_NEAR(per_sync(1), 0, 1e-15);
}

// sync20 (issue 20, item 4) and revision 4: opal_quota puts the quota stall where the inverse
// mapping measures it. The total carries b7 x the stall law; t_sync carries per synchronization
// b10 min(stall, T (1 - q)^2 / 2), one rank's wait as the client's barrier sees it (b10 its own
// parameter, not b7: the transfer rule scales b7 by the kernel ratio, and per synchronization the
// quarter core's client waits about one hop at p = 1 and at p = 3 alike), t_comm half the rest
// (sends and receives to a throttled server), the other half only in the total (the mapping's
// t_idle). A sync share larger than b7's stall is all in the total too.
TEST(Model, OpalQuotaSplitsTheStallWhereTheMappingMeasuresIt) {
  Model m = Model::Load(ResolveModelPath("opal_quota"));
  ASSERT_GE(m.ParamIndex("b10"), 0) << "opal_quota has no b10";
  std::vector<double> f(m.factors().size());
  auto set = [&](const char* n, double v) { f[m.FactorIndex(n)] = v; };
  set("s", 10), set("n", 500), set("nt", 1e6), set("g", 0), set("alpha", 24);
  std::vector<double> p(m.parameters().size());
  auto par = [&](const char* n, double v) { p[m.ParamIndex(n)] = v; };
  par("a1", 100), par("b1", 1e-6), par("a2", 5e-9), par("a3", 2e-8), par("a4", 1e-7),
      par("b5_loop", 1e-6), par("b7", 2), par("b10", 0.8), par("burst", 0),
      par("quota_period", 0.01), par("cores", 2), par("b8", 0);
  auto eval = [&](const char* name) {
    for (const auto& r : m.responses())
      if (r.name == name) return r.expr.Eval<double>(f.data(), p.data());
    ADD_FAILURE() << "no response " << name;
    return 0.0;
  };
  // What the stall adds to a response: b7 and b10 against both 0.
  auto delta = [&](const char* name) {
    double with = eval(name);
    const double b7 = p[m.ParamIndex("b7")], b10 = p[m.ParamIndex("b10")];
    par("b7", 0), par("b10", 0);
    double without = eval(name);
    par("b7", b7), par("b10", b10);
    return with - without;
  };
  auto law = [](double q, double servers, double spare) {
    return 0.01 * spare * ((1 - q) - (1 - std::pow(q, servers + 1)) / (servers + 1));
  };
  struct Case {
    double q, servers, spare;
  };
  // Quarter core: every rank can stall; half core: at p = 2 only rank 1 (alone on core 1), at
  // p = 3 none (the cores are full).
  for (Case c : {Case{0.25, 1, 1}, Case{0.25, 2, 1}, Case{0.25, 3, 1}, Case{0.5, 1, 1},
                 Case{0.5, 2, 1.0 / 3}, Case{0.5, 3, 0}}) {
    for (double u : {0.1, 1.0}) {
      par("cpu_quota", c.q), set("p", c.servers), set("u", u);
      const double syncs = 2 * 10 * (u + 1);
      const double law_wait = law(c.q, c.servers, c.spare);
      const double stall = 2 * law_wait;  // per synchronization, b7 = 2
      const double hop = 0.01 * (1 - c.q) * (1 - c.q) / 2;
      const double in_sync = 0.8 * std::min(law_wait, hop);  // b10 = 0.8
      SCOPED_TRACE("q " + std::to_string(c.q) + " p " + std::to_string(c.servers) + " u " +
                   std::to_string(u));
      EXPECT_NEAR(delta("t_opal"), syncs * std::max(stall, in_sync), 1e-12);
      EXPECT_NEAR(delta("t_sync"), syncs * in_sync, 1e-12);
      EXPECT_NEAR(delta("t_comm"), syncs * std::max(0.0, stall - in_sync) / 2, 1e-12);
      EXPECT_NEAR(delta("t_par_comp") + delta("t_seq_comp"), 0, 1e-15);
    }
  }
  // The sync share does not follow b7 (which the transfer rule scales): only the total does.
  par("cpu_quota", 0.25), set("p", 1), set("u", 1);
  const double sync_before = eval("t_sync"), total_before = eval("t_opal");
  par("b7", 4);
  EXPECT_NEAR(eval("t_sync"), sync_before, 1e-15);
  EXPECT_GT(eval("t_opal"), total_before);
  // Quarter core, p = 3: the barrier one rank's wait (not 1/p of it), under the whole stall.
  par("b7", 2), set("p", 3);
  EXPECT_NEAR(delta("t_sync"), 2 * 10 * 2 * 0.8 * 0.01 * 0.75 * 0.75 / 2, 1e-12);
  EXPECT_LT(delta("t_sync"), 0.5 * delta("t_opal"));
  // A sync share beyond b7's stall: t_comm gets none of it, the total all of it.
  par("b7", 0.1), set("p", 1);
  EXPECT_NEAR(delta("t_comm"), 0, 1e-15);
  EXPECT_NEAR(delta("t_opal"), delta("t_sync"), 1e-12);
}

// Revision 3 (issue 20, phase length): each compute phase (a pair-list update, an energy
// evaluation) saves b9 (1 - q) min(phase, T), its first quota period partly at full speed: a
// phase shorter than the period saves that share of itself, a longer one of the period only.
// Nothing without a quota; the other components do not change.
TEST(Model, OpalQuotaComputePhaseStartsAtFullSpeed) {
  Model m = Model::Load(ResolveModelPath("opal_quota"));
  ASSERT_GE(m.ParamIndex("b9"), 0);
  std::vector<double> f(m.factors().size());
  auto set = [&](const char* n, double v) { f[m.FactorIndex(n)] = v; };
  set("s", 10), set("u", 0.5), set("nt", 1e6), set("g", 0), set("alpha", 24);
  std::vector<double> p(m.parameters().size());
  auto par = [&](const char* n, double v) { p[m.ParamIndex(n)] = v; };
  par("a1", 100), par("b1", 1e-6), par("a2", 5e-9), par("a3", 2e-8), par("a4", 1e-7),
      par("b5_loop", 1e-6), par("b7", 1), par("burst", 0), par("cpu_quota", 0.5),
      par("quota_period", 0.01), par("cores", 2), par("b8", 0);
  auto eval = [&](const char* name) {
    for (const auto& r : m.responses())
      if (r.name == name) return r.expr.Eval<double>(f.data(), p.data());
    ADD_FAILURE() << "no response " << name;
    return 0.0;
  };
  auto saved = [&](const char* name) {
    par("b9", 0);
    double without = eval(name);
    par("b9", 0.4);
    return without - eval(name);
  };
  for (double servers : {1.0, 3.0}) {
    for (double n : {300.0, 3000.0}) {
      set("p", servers), set("n", n);
      double upd = 5e-9 / servers * n * n / 2 - 5e-9 / servers * n / 2;
      double nb = 2e-8 / servers * n * (n - 1) / 2;
      double expect = 10 * 0.5 * 0.4 * 0.5 * std::min(upd, 0.01) +  // s u b9 (1 - q) min(., T)
                      10 * 0.4 * 0.5 * std::min(nb, 0.01);
      SCOPED_TRACE("p " + std::to_string(servers) + " n " + std::to_string(n));
      EXPECT_NEAR(saved("t_par_comp"), expect, 1e-12);
      EXPECT_NEAR(saved("t_opal"), expect, 1e-12);
      EXPECT_NEAR(saved("t_sync"), 0, 1e-15);
      EXPECT_NEAR(saved("t_seq_comp"), 0, 1e-15);
    }
  }
  // n = 300, p = 3: both phases under the period, each saves b9 (1 - q) of itself.
  set("p", 3), set("n", 300);
  double nb = 2e-8 / 3 * 300 * 299 / 2;
  ASSERT_LT(nb, 0.01);
  EXPECT_NEAR(saved("t_par_comp"),
              10 * 0.2 * nb + 5 * 0.2 * (5e-9 / 3 * 300 * 300 / 2 - 5e-9 / 3 * 150), 1e-12);
  // No quota: nothing saved.
  par("cpu_quota", 0), par("quota_period", 0);
  EXPECT_NEAR(saved("t_opal"), 0, 1e-15);
}

TEST(Model, UnknownSymbolNamesFileLineAndColumn) {
  std::string e = ErrorOf(std::string(kHead) + "[total]\ncolumn = \"t\"\nexpr = \"a*x + c*n\"\n");
  // line 10, the string starts at column 8, 'c' is its 7th character.
  EXPECT_NE(e.find("bad.toml:10:15: unknown symbol 'c'"), std::string::npos) << e;
}

TEST(Model, BadTokenNamesLineAndColumn) {
  std::string e = ErrorOf(std::string(kHead) + "[total]\nexpr = \"a * x # b\"\n");
  EXPECT_NE(e.find("bad.toml:9:15: unexpected character '#'"), std::string::npos) << e;
  e = ErrorOf(std::string(kHead) + "[total]\nexpr = \"a * (x + b\"\n");
  EXPECT_NE(e.find("expected ')'"), std::string::npos) << e;
  e = ErrorOf(std::string(kHead) + "[total]\nexpr = \"\"\"\na * x +\n  b ^ ^ 2\"\"\"\n");
  EXPECT_NE(e.find("bad.toml:11:7: unexpected '^'"), std::string::npos) << e;
}

TEST(Model, ParameterInDivisorNeedsALowerBound) {
  std::string e = ErrorOf(R"(name = "m"
[factors]
x = "x"
[parameters]
k = { initial = 1 }
[total]
expr = "x / k"
)");
  EXPECT_NE(e.find("bad.toml:5:5: parameter 'k'"), std::string::npos) << e;
  EXPECT_NE(e.find("needs a 'lower' bound"), std::string::npos) << e;
}

TEST(Model, StructuralErrors) {
  EXPECT_NE(
      ErrorOf(std::string(kHead) + "[definitions]\nq = \"r\"\nr = \"q\"\n[total]\nexpr = \"q\"\n")
          .find("defined in terms of itself"),
      std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHead) + "[total]\ncolumn = \"t\"\n").find("lacks 'expr'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHead) + "[total]\nexpr = \"a\"\nweight = 2\n")
                .find("unknown key 'weight'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHead)).find("missing [total]"), std::string::npos);
  EXPECT_NE(ErrorOf("name = \"m\"\n[factors]\nx = \"x\"\n[parameters]\na = { lower = 0 }\n"
                    "[total]\nexpr = \"a\"\n")
                .find("lacks 'initial'"),
            std::string::npos);
  EXPECT_NE(ErrorOf("name = \"m\"\n[factors]\nx = \"x\"\n[parameters]\n"
                    "x = { initial = 1 }\n[total]\nexpr = \"x\"\n")
                .find("defined twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf("name = \"m\"\nfactors = [1,\n").find("bad.toml:"), std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kHead) + "[definitions]\nunused = \"zz\"\n[total]\nexpr = \"a\"\n")
                .find("unknown symbol 'zz'"),
            std::string::npos);
}

// Issue 16, item 6: TOML admits nan and inf; `initial = nan` passed every bound check (NaN
// compares false) and crashed the fit.
TEST(Model, NonFiniteNumbersAreRefused) {
  auto with = [](const std::string& param) {
    return ErrorOf("name = \"m\"\n[factors]\nx = \"x\"\n[parameters]\n" + param +
                   "\n[total]\nexpr = \"a * x\"\n");
  };
  std::string e = with("a = { initial = nan }");
  EXPECT_NE(e.find("bad.toml:5:17: parameter 'a' initial must be a finite number, not nan"),
            std::string::npos)
      << e;
  EXPECT_NE(with("a = { initial = 1, upper = inf }").find("parameter 'a' upper must be a finite"),
            std::string::npos);
  EXPECT_NE(with("a = { initial = 1, lower = -inf }").find("not -inf"), std::string::npos);
  EXPECT_NE(ErrorOf("name = \"m\"\n[factors]\nx = { default = nan }\n[parameters]\n"
                    "a = { initial = 1 }\n[total]\nexpr = \"a * x\"\n")
                .find("factor 'x' default must be a finite number"),
            std::string::npos);
}

// Issue 16, item 7: recursion over user input is bounded in the model loader too.
TEST(Model, DeepExpressionsAndDefinitionChainsAreRefused) {
  // Deep parentheses: the error points into the file and quotes an excerpt, not 60000 chars.
  std::string deep = std::string(30000, '(') + "a" + std::string(30000, ')');
  std::string e = ErrorOf(std::string(kHead) + "[total]\nexpr = \"" + deep + "\"\n");
  EXPECT_NE(e.find("bad.toml:9:209: nesting deeper than 200 at column 201"), std::string::npos)
      << e.substr(0, 300);
  EXPECT_LT(e.size(), 400u);
  // A chain of definitions each naming the next recursed once per link.
  std::string chain = std::string(kHead) + "[definitions]\n";
  for (int i = 0; i < 30000; ++i)
    chain += "d" + std::to_string(i) + " = \"d" + std::to_string(i + 1) + "\"\n";
  chain += "d30000 = \"a\"\n[total]\nexpr = \"d0\"\n";
  e = ErrorOf(chain);
  EXPECT_NE(e.find("definitions nest deeper than 200"), std::string::npos) << e;
  // Definitions that inline each other twice grow exponentially; the size is bounded.
  std::string grow = std::string(kHead) + "[definitions]\nd0 = \"a\"\n";
  for (int i = 1; i <= 20; ++i)
    grow += "d" + std::to_string(i) + " = \"d" + std::to_string(i - 1) + " + d" +
            std::to_string(i - 1) + "\"\n";
  grow += "[total]\nexpr = \"d20\"\n";
  e = ErrorOf(grow);
  EXPECT_NE(e.find("more than 100000 nodes"), std::string::npos) << e;
}

TEST(DataTable, CsvParsingAndErrors) {
  DataTable t = ParseCsv("# runs\np, n ,t\n1,100,0.5\n2,100,\n", "d.csv");
  ASSERT_EQ(t.columns, (std::vector<std::string>{"p", "n", "t"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(t.rows[0][2], 0.5);
  EXPECT_TRUE(std::isnan(t.rows[1][2]));
  EXPECT_EQ(t.RowOrigin(1), "d.csv:4");
  try {
    ParseCsv("p,t\n1,abc\n2,0.5\n", "d.csv");  // text among numbers
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("d.csv:2:3: column 't': 'abc'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(ParseCsv("p,t\n1,2,3\n", "d.csv"), DataError);
  EXPECT_THROW(ParseCsv("p,p\n1,2\n", "d.csv"), DataError);
  EXPECT_THROW(ReadCsv("/nonexistent.csv"), DataError);
}

// The CSV of `invmw results export`: a text column (platform, a string factor) and RFC 4180
// quoting are read, not refused.
TEST(DataTable, CsvTextColumnsAndQuoting) {
  DataTable t = ParseCsv(
      "point,replication,platform,bytes,\"mpi, flavour\",t\n"
      "0,0,local,100,\"open\"\"mpi, 4\"\"\",0.25\n"
      "1,0,local,200,\"open\"\"mpi, 4\"\"\",\n",
      "e.csv");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"point", "replication", "bytes", "t"}));
  ASSERT_EQ(t.text_columns.size(), 2u);
  EXPECT_EQ(t.text_columns[0], (std::pair<std::string, std::string>{"platform", "local"}));
  EXPECT_EQ(t.text_columns[1],
            (std::pair<std::string, std::string>{"mpi, flavour", "open\"mpi, 4\""}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(t.rows[1][2], 200);
  EXPECT_DOUBLE_EQ(t.rows[0][3], 0.25);
  EXPECT_TRUE(std::isnan(t.rows[1][3]));
  try {
    ParseCsv("p,t\n1,\"2\n", "q.csv");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("q.csv:2: a quoted cell is not closed"), std::string::npos)
        << e.what();
  }
}

// opal_burst (issue 20, item 4): opal with each communication phase's first `burst` bytes free
// (a token bucket refilled during the computation before the phase); burst = 0 is opal.
TEST(Model, OpalBurstSubtractsTheBurstPerPhase) {
  Model m = Model::Load(ResolveModelPath("opal_burst"));
  Model o = Model::Load(ResolveModelPath("opal"));
  ASSERT_EQ(m.responses().size(), o.responses().size());
  ASSERT_GE(m.ParamIndex("burst"), 0);
  std::vector<double> f(m.factors().size()), fo(o.factors().size());
  auto set = [&](const char* n, double v) {
    f[m.FactorIndex(n)] = v;
    fo[o.FactorIndex(n)] = v;
  };
  set("s", 12), set("u", 1), set("n", 1500), set("nt", 1e6), set("g", 0), set("alpha", 24);
  std::vector<double> p(m.parameters().size()), po(o.parameters().size());
  for (const char* n : {"a1", "b1", "a2", "a3", "a4", "b5"}) {
    double v = std::string(n) == "a1" ? 12.5 : 1e-6;
    p[m.ParamIndex(n)] = v;
    po[o.ParamIndex(n)] = v;
  }
  const int comm = 3;  // the total first, then t_par_comp, t_seq_comp, t_comm, t_sync
  ASSERT_EQ(m.responses()[comm].name, "t_comm");
  for (double servers : {1.0, 3.0}) {
    set("p", servers);
    p[m.ParamIndex("burst")] = 0;
    EXPECT_DOUBLE_EQ(m.responses()[comm].expr.Eval<double>(f.data(), p.data()),
                     o.responses()[comm].expr.Eval<double>(fo.data(), po.data()));
    p[m.ParamIndex("burst")] = 16384;
    // 12 steps x 3 phases (update requests, energy requests, energy replies) x 16384 bytes.
    EXPECT_NEAR(o.responses()[comm].expr.Eval<double>(fo.data(), po.data()) -
                    m.responses()[comm].expr.Eval<double>(f.data(), p.data()),
                12 * 3 * 16384 / 12.5e6, 1e-12);
    p[m.ParamIndex("burst")] = 1e8;  // more than a phase sends: only the per-message b1 is left
    EXPECT_NEAR(m.responses()[comm].expr.Eval<double>(f.data(), p.data()),
                12 * 2 * servers * 1e-6 * 2, 1e-15);
  }
  for (int r : {1, 2, 4})  // the other components are opal's
    EXPECT_DOUBLE_EQ(m.responses()[r].expr.Eval<double>(f.data(), p.data()),
                     o.responses()[r].expr.Eval<double>(fo.data(), po.data()));
}

}  // namespace
}  // namespace invmw::fit
