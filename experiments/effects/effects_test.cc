// The effects analysis on data with known results: Jain's worked examples (2^2 without and
// with replications, a two-factor design without replications), a 2^(7-4) fraction with known
// generators, cross-checks of the sign table against the general method, and the errors for
// data the methods cannot use.
#include "experiments/effects/effects.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "experiments/effects/effects_report.h"
#include "experiments/effects/sign_table.h"

namespace invmw::effects {
namespace {

struct Builder {
  std::vector<Run> rows;
  Run& Add(int64_t point, int64_t rep, const std::string& factors, double y,
           const std::string& response = "y", bool ok = true,
           const std::string& platform = "local") {
    Run r;
    r.id = static_cast<int64_t>(rows.size()) + 1;
    r.point = point;
    r.replication = rep;
    r.platform = platform;
    r.factors = nlohmann::ordered_json::parse(factors);
    if (ok) {
      r.responses[response] = y;
      r.response_order.push_back(response);
    } else {
      r.error = "exit status 1: server crashed";
    }
    r.ok = ok;
    rows.push_back(r);
    return rows.back();
  }
};

EffectsReport Analyze(const std::vector<Run>& rows, AnalyzeRequest req = {}) {
  req.design = "test";
  req.db = "memory";
  EffectsReport report;
  std::string error;
  EXPECT_TRUE(AnalyzeDesign(rows, req, &report, &error)) << error;
  return report;
}

std::string AnalyzeError(const std::vector<Run>& rows, AnalyzeRequest req = {}) {
  req.design = "test";
  EffectsReport report;
  std::string error;
  EXPECT_FALSE(AnalyzeDesign(rows, req, &report, &error));
  return error;
}

const Term& Find(const ResponseEffects& r, const std::string& name) {
  for (const Term& t : r.terms)
    if (t.name == name) return t;
  ADD_FAILURE() << "no term " << name;
  static Term none;
  return none;
}

// Jain, Example 17.1 and 17.2: memory 4/16 MB x cache 1/2 KB, 15, 45, 25, 75 MIPS.
Builder Jain2x2() {
  Builder b;
  b.Add(0, 0, R"({"memory": 4, "cache": 1})", 15, "mips");
  b.Add(1, 0, R"({"memory": 16, "cache": 1})", 45, "mips");
  b.Add(2, 0, R"({"memory": 4, "cache": 2})", 25, "mips");
  b.Add(3, 0, R"({"memory": 16, "cache": 2})", 75, "mips");
  return b;
}

TEST(Effects, JainTwoByTwoUnreplicated) {
  EffectsReport rep = Analyze(Jain2x2().rows);
  ASSERT_EQ(rep.method, Method::kSignTable);
  ASSERT_EQ(rep.responses.size(), 1u);
  const ResponseEffects& r = rep.responses[0];
  EXPECT_EQ(r.response, "mips");
  EXPECT_DOUBLE_EQ(r.mean.value, 40);
  EXPECT_DOUBLE_EQ(Find(r, "memory").q.value, 20);
  EXPECT_DOUBLE_EQ(Find(r, "cache").q.value, 10);
  EXPECT_DOUBLE_EQ(Find(r, "memory*cache").q.value, 5);
  EXPECT_DOUBLE_EQ(r.sst, 2100);
  EXPECT_NEAR(Find(r, "memory").variation, 76.2, 0.05);
  EXPECT_NEAR(Find(r, "cache").variation, 19.0, 0.05);
  EXPECT_NEAR(Find(r, "memory*cache").variation, 4.8, 0.05);
  // No replications: no error term, no intervals, and the text says so.
  EXPECT_FALSE(r.has_error);
  EXPECT_TRUE(std::isnan(Find(r, "memory").q.ci_low));
  std::string text = FormatText(rep, {});
  EXPECT_NE(text.find("No error term"), std::string::npos) << text;
  EXPECT_NE(text.find("76.19 %"), std::string::npos) << text;
  auto j = ToJson(rep);
  EXPECT_TRUE(j["responses"][0]["error"].is_null());
  EXPECT_TRUE(j["responses"][0]["terms"][0]["q"]["ci"].is_null());
  EXPECT_EQ(j["responses"][0]["terms"][2]["name"], "memory*cache");
}

// Jain, Examples 18.1-18.3: the same study with three replications, published values.
TEST(Effects, JainTwoByTwoReplicated) {
  Builder b;
  const double y[4][3] = {{15, 18, 12}, {45, 48, 51}, {25, 28, 19}, {75, 75, 81}};
  const char* f[4] = {R"({"memory": 4, "cache": 1})", R"({"memory": 16, "cache": 1})",
                      R"({"memory": 4, "cache": 2})", R"({"memory": 16, "cache": 2})"};
  for (int p = 0; p < 4; ++p)
    for (int k = 0; k < 3; ++k) b.Add(p, k, f[p], y[p][k], "mips");
  EffectsReport rep = Analyze(b.rows);
  const ResponseEffects& r = rep.responses[0];
  EXPECT_DOUBLE_EQ(r.mean.value, 41);
  EXPECT_DOUBLE_EQ(Find(r, "memory").q.value, 21.5);
  EXPECT_DOUBLE_EQ(Find(r, "cache").q.value, 9.5);
  EXPECT_DOUBLE_EQ(Find(r, "memory*cache").q.value, 5);
  EXPECT_NEAR(r.ssy, 27204, 1e-9);
  EXPECT_NEAR(r.ss0, 20172, 1e-9);
  EXPECT_NEAR(r.sst, 7032, 1e-9);
  EXPECT_NEAR(Find(r, "memory").ss, 5547, 1e-9);
  EXPECT_NEAR(Find(r, "cache").ss, 1083, 1e-9);
  EXPECT_NEAR(Find(r, "memory*cache").ss, 300, 1e-9);
  EXPECT_NEAR(r.sse, 102, 1e-9);
  EXPECT_EQ(r.dof_error, 8);
  EXPECT_NEAR(Find(r, "memory").variation, 78.88, 0.005);
  EXPECT_NEAR(Find(r, "cache").variation, 15.40, 0.005);
  EXPECT_NEAR(Find(r, "memory*cache").variation, 4.27, 0.005);
  EXPECT_NEAR(r.error_variation, 1.45, 0.005);
  EXPECT_NEAR(r.s_e, 3.57, 0.005);
  EXPECT_NEAR(r.mean.std_error, 1.03, 0.005);
  EXPECT_NEAR(r.t, 1.86, 0.0005);
  // Jain's 90% intervals (he truncates the last digit): (39.08, 42.91), (19.58, 23.41),
  // (7.58, 11.41), (3.08, 6.91).
  EXPECT_NEAR(r.mean.ci_low, 39.08, 0.01);
  EXPECT_NEAR(r.mean.ci_high, 42.91, 0.01);
  EXPECT_NEAR(Find(r, "memory").q.ci_low, 19.58, 0.01);
  EXPECT_NEAR(Find(r, "memory").q.ci_high, 23.41, 0.01);
  EXPECT_NEAR(Find(r, "cache").q.ci_low, 7.58, 0.01);
  EXPECT_NEAR(Find(r, "cache").q.ci_high, 11.41, 0.01);
  EXPECT_NEAR(Find(r, "memory*cache").q.ci_low, 3.08, 0.01);
  EXPECT_NEAR(Find(r, "memory*cache").q.ci_high, 6.91, 0.01);
  for (const Term& t : r.terms) EXPECT_TRUE(t.q.significant) << t.name;
  // A higher confidence widens the intervals by the ratio of the t quantiles (2.306 at 95%).
  AnalyzeRequest req;
  req.analysis.confidence = 0.95;
  EffectsReport rep95 = Analyze(b.rows, req);
  EXPECT_NEAR(rep95.responses[0].mean.ci_high - 41, 2.306 * 1.0308, 0.001);
}

// Jain, Example 21.1: execution times (ms) of five workloads with two caches, one cache and no
// cache, one replication; the additive model pools the interaction into the error.
TEST(Effects, JainTwoFactorWithoutReplications) {
  const char* workloads[5] = {"ASM", "TECO", "SIEVE", "DHRYSTONE", "SORT"};
  const char* caches[3] = {"two", "one", "none"};
  const double y[5][3] = {
      {54, 55, 106}, {60, 60, 123}, {43, 43, 120}, {49, 52, 111}, {49, 50, 108}};
  Builder b;
  int point = 0;
  for (int c = 0; c < 3; ++c)
    for (int w = 0; w < 5; ++w) {
      nlohmann::ordered_json f;
      f["workload"] = workloads[w];
      f["cache"] = caches[c];
      b.Add(point++, 0, f.dump(), y[w][c], "time_ms");
    }
  AnalyzeRequest req;
  req.analysis.max_order = 1;
  EffectsReport rep = Analyze(b.rows, req);
  ASSERT_EQ(rep.method, Method::kGeneral);
  const ResponseEffects& r = rep.responses[0];
  // String levels keep the design's order.
  EXPECT_EQ(rep.layout.factors[1].levels, (std::vector<std::string>{"two", "one", "none"}));
  EXPECT_NEAR(r.mean.value, 72.2, 1e-9);
  const Term& cache = Find(r, "cache");
  ASSERT_EQ(cache.cells.size(), 3u);
  EXPECT_NEAR(cache.cells[0].effect.value, -21.2, 1e-9);
  EXPECT_NEAR(cache.cells[1].effect.value, -20.2, 1e-9);
  EXPECT_NEAR(cache.cells[2].effect.value, 41.4, 1e-9);
  const Term& workload = Find(r, "workload");
  const double published[5] = {-0.5333, 8.8, -3.5333, -1.5333, -3.2};
  for (int w = 0; w < 5; ++w) EXPECT_NEAR(workload.cells[w].effect.value, published[w], 1e-4);
  ASSERT_EQ(r.pooled, std::vector<std::string>{"workload*cache"});
  EXPECT_EQ(r.dof_error, 8);
  // Sums of squares by hand: SSA = b * sum(alpha^2), SSB = a * sum(beta^2), SSE = SST - both.
  double sst = 0;
  for (auto& row : y)
    for (double v : row) sst += (v - 72.2) * (v - 72.2);
  const double ss_cache = 5 * (21.2 * 21.2 + 20.2 * 20.2 + 41.4 * 41.4);
  double ss_workload = 0;
  for (double e : published) ss_workload += 3 * e * e;
  EXPECT_NEAR(r.sst, sst, 1e-9);
  EXPECT_NEAR(cache.ss, ss_cache, 1e-9);
  EXPECT_NEAR(workload.ss, ss_workload, 0.01);
  EXPECT_NEAR(r.sse, sst - ss_cache - workload.ss, 1e-9);
  EXPECT_NEAR(cache.variation, 100 * ss_cache / sst, 1e-9);
  EXPECT_EQ(cache.dof, 2);
  EXPECT_EQ(workload.dof, 4);
  // s_alpha = s_e * sqrt((a-1)/(ab)) for the 3 cache levels (Jain Table 21.5).
  EXPECT_NEAR(cache.cells[0].effect.std_error, r.s_e * std::sqrt(2.0 / 15), 1e-12);
  EXPECT_NEAR(workload.cells[0].effect.std_error, r.s_e * std::sqrt(4.0 / 15), 1e-12);
  EXPECT_TRUE(cache.cells[2].effect.significant);
  EXPECT_LT(cache.p, 1e-6);
}

// A random replicated 2^3: the sign table and the general method agree on every number.
TEST(Effects, SignTableAgreesWithGeneralMethod) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 2);
  Builder b;
  int point = 0;
  for (int c = 0; c < 2; ++c)
    for (int bb = 0; bb < 2; ++bb)
      for (int a = 0; a < 2; ++a, ++point)
        for (int k = 0; k < 3; ++k) {
          nlohmann::ordered_json f;
          f["a"] = a ? 8 : 2;
          f["b"] = bb ? "tcp" : "shm";
          f["c"] = c ? 0.5 : 0.25;
          double y = 100 + 10 * a - 4 * bb + 3 * a * c + noise(rng);
          b.Add(point, k, f.dump(), y);
        }
  AnalyzeRequest sign, general;
  sign.force = AnalyzeRequest::Force::kSignTable;
  general.force = AnalyzeRequest::Force::kGeneral;
  const ResponseEffects s = Analyze(b.rows, sign).responses[0];
  const ResponseEffects g = Analyze(b.rows, general).responses[0];
  ASSERT_EQ(s.terms.size(), 7u);
  ASSERT_EQ(g.terms.size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(s.terms[i].name, g.terms[i].name);
    EXPECT_NEAR(s.terms[i].q.value, g.terms[i].q.value, 1e-12) << s.terms[i].name;
    EXPECT_NEAR(s.terms[i].q.value, g.terms[i].cells.back().effect.value, 1e-12);
    // At the low levels the effect is q * (-1)^order.
    EXPECT_NEAR(g.terms[i].cells.front().effect.value,
                s.terms[i].q.value * (s.terms[i].order % 2 ? -1 : 1), 1e-12);
    EXPECT_NEAR(s.terms[i].ss, g.terms[i].ss, 1e-9);
    EXPECT_NEAR(s.terms[i].q.ci_high, g.terms[i].q.ci_high, 1e-12);
    EXPECT_NEAR(s.terms[i].p, g.terms[i].p, 1e-12);
  }
  EXPECT_NEAR(s.sse, g.sse, 1e-9);
  EXPECT_EQ(s.dof_error, 16);
  // The allocation is complete: effects and error explain all variation.
  double total = s.error_variation;
  for (const Term& t : s.terms) total += t.variation;
  EXPECT_NEAR(total, 100, 1e-9);
  // In +-1 coding the model is q_a = 5.75, q_b = -2, q_c = q_ac = 0.75.
  EXPECT_LT(std::fabs(Find(s, "a").q.value - 5.75), 4 * Find(s, "a").q.std_error);
  EXPECT_LT(std::fabs(Find(s, "b").q.value + 2), 4 * Find(s, "b").q.std_error);
  EXPECT_TRUE(Find(s, "a").q.significant);
  EXPECT_TRUE(Find(s, "b").q.significant);
}

// A three-factor design with 3 x 2 x 4 levels and 2 replications: every SS against the
// textbook marginal-mean formulas written out per term.
TEST(Effects, ThreeFactorMultiLevelByHand) {
  const int A = 3, B = 2, C = 4, R = 2;
  double y[A][B][C][R];
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 10);
  Builder b;
  int point = 0;
  for (int c = 0; c < C; ++c)
    for (int bb = 0; bb < B; ++bb)
      for (int a = 0; a < A; ++a, ++point)
        for (int r = 0; r < R; ++r) {
          y[a][bb][c][r] = 20 + 5 * a + 3 * bb * c + u(rng);
          nlohmann::ordered_json f;
          f["p"] = 1 << a;
          f["net"] = bb ? "slow" : "fast";
          f["n"] = 1000 * (c + 1);
          b.Add(point, r, f.dump(), y[a][bb][c][r], "t_wall");
        }
  const ResponseEffects res = Analyze(b.rows).responses[0];
  // Means by hand.
  double m = 0, ma[A] = {}, mb[B] = {}, mc[C] = {}, mab[A][B] = {}, mac[A][C] = {}, mbc[B][C] = {},
         mabc[A][B][C] = {};
  for (int a = 0; a < A; ++a)
    for (int bb = 0; bb < B; ++bb)
      for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r) {
          double v = y[a][bb][c][r];
          m += v / (A * B * C * R);
          ma[a] += v / (B * C * R);
          mb[bb] += v / (A * C * R);
          mc[c] += v / (A * B * R);
          mab[a][bb] += v / (C * R);
          mac[a][c] += v / (B * R);
          mbc[bb][c] += v / (A * R);
          mabc[a][bb][c] += v / R;
        }
  double ssa = 0, ssb = 0, ssc = 0, ssab = 0, ssac = 0, ssbc = 0, ssabc = 0, sse = 0;
  for (int a = 0; a < A; ++a)
    for (int bb = 0; bb < B; ++bb)
      for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r) {
          ssa += std::pow(ma[a] - m, 2);
          ssb += std::pow(mb[bb] - m, 2);
          ssc += std::pow(mc[c] - m, 2);
          ssab += std::pow(mab[a][bb] - ma[a] - mb[bb] + m, 2);
          ssac += std::pow(mac[a][c] - ma[a] - mc[c] + m, 2);
          ssbc += std::pow(mbc[bb][c] - mb[bb] - mc[c] + m, 2);
          ssabc += std::pow(
              mabc[a][bb][c] - mab[a][bb] - mac[a][c] - mbc[bb][c] + ma[a] + mb[bb] + mc[c] - m, 2);
          sse += std::pow(y[a][bb][c][r] - mabc[a][bb][c], 2);
        }
  EXPECT_NEAR(Find(res, "p").ss, ssa, 1e-9);
  EXPECT_NEAR(Find(res, "net").ss, ssb, 1e-9);
  EXPECT_NEAR(Find(res, "n").ss, ssc, 1e-9);
  EXPECT_NEAR(Find(res, "p*net").ss, ssab, 1e-9);
  EXPECT_NEAR(Find(res, "p*n").ss, ssac, 1e-9);
  EXPECT_NEAR(Find(res, "net*n").ss, ssbc, 1e-9);
  EXPECT_NEAR(Find(res, "p*net*n").ss, ssabc, 1e-9);
  EXPECT_NEAR(res.sse, sse, 1e-9);
  EXPECT_EQ(Find(res, "p*net*n").dof, 2 * 1 * 3);
  EXPECT_EQ(res.dof_error, A * B * C * (R - 1));
  // One interaction effect by hand: gamma at p=4 (level 2), net=slow, n=3000.
  const Term& abc = Find(res, "p*net*n");
  bool found = false;
  for (const auto& cell : abc.cells)
    if (cell.levels == std::vector<int>{2, 1, 2}) {
      found = true;
      EXPECT_NEAR(cell.effect.value,
                  mabc[2][1][2] - mab[2][1] - mac[2][2] - mbc[1][2] + ma[2] + mb[1] + mc[2] - m,
                  1e-12);
      EXPECT_NEAR(cell.effect.std_error, res.s_e * std::sqrt(2.0 * 1 * 3 / (A * B * C * R)), 1e-12);
    }
  EXPECT_TRUE(found);
  // The numeric factor's levels are ordered ascending, the string one by appearance.
  EXPECT_EQ(res.terms.size(), 7u);
  // The text lists main effects, and interaction effects only with --all-effects.
  EffectsReport rep = Analyze(b.rows);
  EXPECT_EQ(rep.layout.factors[0].levels, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(rep.layout.factors[1].levels, (std::vector<std::string>{"fast", "slow"}));
  std::string text = FormatText(rep, {});
  EXPECT_NE(text.find("net=slow"), std::string::npos) << text;
  EXPECT_EQ(text.find("p=4, net=slow, n=3000"), std::string::npos) << text;
  EXPECT_NE(FormatText(rep, {true}).find("p=4, net=slow, n=3000"), std::string::npos);
}

// A 2^(7-4) design with generators D = AB, E = AC, F = BC, G = ABC (Jain Example 19.1's
// pattern): resolution III, 15 words in the defining relation, 7 estimable alias groups.
TEST(Effects, FractionalTwoLevelConfounding) {
  Builder b;
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.1);
  for (int i = 0; i < 8; ++i) {
    int A = i & 1 ? 1 : -1, B = i & 2 ? 1 : -1, C = i & 4 ? 1 : -1;
    int D = A * B, E = A * C, F = B * C, G = A * B * C;
    nlohmann::ordered_json f = {{"A", A}, {"B", B}, {"C", C}, {"D", D},
                                {"E", E}, {"F", F}, {"G", G}};
    double y = 50 + 6 * A - 3 * E + 2 * G;
    b.Add(i, 0, f.dump(), y + noise(rng));
    b.Add(i, 1, f.dump(), y + noise(rng));
  }
  EffectsReport rep = Analyze(b.rows);
  ASSERT_FALSE(rep.layout.full);
  EXPECT_EQ(rep.layout.fraction.p, 4);
  EXPECT_EQ(rep.layout.fraction.resolution, 3);
  EXPECT_EQ(rep.layout.fraction.defining_relation.size(), 15u);
  const ResponseEffects& r = rep.responses[0];
  ASSERT_EQ(r.terms.size(), 7u);
  const Term& a = Find(r, "A");
  EXPECT_NEAR(a.q.value, 6, 0.2);
  EXPECT_EQ(a.aliases.size(), 15u);
  EXPECT_NE(std::find(a.aliases.begin(), a.aliases.end(), "+B*D"), a.aliases.end());
  EXPECT_NEAR(Find(r, "E").q.value, -3, 0.2);
  EXPECT_NEAR(Find(r, "G").q.value, 2, 0.2);
  EXPECT_EQ(r.dof_error, 8);
  std::string text = FormatText(rep, {});
  EXPECT_NE(text.find("2^(7-4) fraction, resolution III"), std::string::npos) << text;
  EXPECT_NE(text.find("I = A*B*D"), std::string::npos) << text;
  auto j = ToJson(rep);
  EXPECT_EQ(j["fraction"]["resolution"], 3);
}

TEST(Effects, MissingPointIsNamed) {
  Builder b;
  int point = 0;
  for (int p : {1, 2, 4})
    for (const char* net : {"shm", "tcp"}) {
      nlohmann::ordered_json f = {{"p", p}, {"net", net}};
      if (!(p == 2 && std::string(net) == "tcp")) b.Add(point, 0, f.dump(), p);
      ++point;
    }
  std::string error = AnalyzeError(b.rows);
  EXPECT_NE(error.find("missing design point: (p=2, net=tcp)"), std::string::npos) << error;
}

TEST(Effects, PointWithOnlyFailedRunsIsNamed) {
  Builder b = Jain2x2();
  b.rows.pop_back();
  b.Add(3, 0, R"({"memory": 16, "cache": 2})", 0, "mips", /*ok=*/false);
  std::string error = AnalyzeError(b.rows);
  EXPECT_NE(error.find("missing design point 3 (memory=16, cache=2): no successful run"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("server crashed"), std::string::npos) << error;
}

TEST(Effects, UnequalReplications) {
  Builder b = Jain2x2();
  b.Add(0, 1, R"({"memory": 4, "cache": 1})", 16, "mips");
  std::string error = AnalyzeError(b.rows);
  EXPECT_NE(error.find("unequal replications"), std::string::npos) << error;
  EXPECT_NE(error.find("memory=4, cache=1"), std::string::npos) << error;
  AnalyzeRequest req;
  req.collect.replications = 1;
  EXPECT_DOUBLE_EQ(Analyze(b.rows, req).responses[0].mean.value, 40);
}

TEST(Effects, ResponseMissingInARun) {
  Builder b = Jain2x2();
  b.rows[2].responses.clear();
  b.rows[2].response_order.clear();
  AnalyzeRequest req;
  req.responses = {"mips"};
  std::string error = AnalyzeError(b.rows, req);
  EXPECT_NE(error.find("response 'mips' is missing at design point 2 (memory=4, cache=2)"),
            std::string::npos)
      << error;
}

TEST(Effects, ConstantFactorIsLeftOutWithANote) {
  Builder b;
  b.Add(0, 0, R"({"s": 10, "memory": 4, "cache": 1})", 15, "mips");
  b.Add(1, 0, R"({"s": 10, "memory": 16, "cache": 1})", 45, "mips");
  b.Add(2, 0, R"({"s": 10, "memory": 4, "cache": 2})", 25, "mips");
  b.Add(3, 0, R"({"s": 10, "memory": 16, "cache": 2})", 75, "mips");
  EffectsReport rep = Analyze(b.rows);
  ASSERT_EQ(rep.layout.factors.size(), 2u);
  ASSERT_FALSE(rep.notes.empty());
  EXPECT_NE(rep.notes[0].find("s=10"), std::string::npos);
  EXPECT_DOUBLE_EQ(Find(rep.responses[0], "memory").q.value, 20);
}

TEST(Effects, PlatformsMustBeChosenWhenPointsRepeat) {
  Builder b = Jain2x2();
  for (int i = 0; i < 4; ++i) {
    invmw::effects::Run r = b.rows[i];
    r.platform = "emu-8x25";
    r.responses["mips"] *= 2;
    b.rows.push_back(r);
  }
  std::string error = AnalyzeError(b.rows);
  EXPECT_NE(error.find("several platforms (emu-8x25, local); choose one with --platform"),
            std::string::npos)
      << error;
  AnalyzeRequest req;
  req.platform = "emu-8x25";
  EXPECT_DOUBLE_EQ(Analyze(b.rows, req).responses[0].mean.value, 80);
}

TEST(Effects, PlatformVaryingByPointIsAFactor) {
  Builder b;
  b.Add(0, 0, R"({"p": 1})", 10, "y", true, "local");
  b.Add(1, 0, R"({"p": 2})", 6, "y", true, "local");
  b.Add(2, 0, R"({"p": 1})", 20, "y", true, "emu");
  b.Add(3, 0, R"({"p": 2})", 12, "y", true, "emu");
  EffectsReport rep = Analyze(b.rows);
  ASSERT_EQ(rep.layout.factors.size(), 2u);
  EXPECT_EQ(rep.layout.factors[1].name, "platform");
  EXPECT_DOUBLE_EQ(Find(rep.responses[0], "platform").q.value, 4);
}

TEST(Effects, LogTransform) {
  AnalyzeRequest req;
  req.collect.log10 = true;
  const ResponseEffects r = Analyze(Jain2x2().rows, req).responses[0];
  const double l[4] = {std::log10(15.0), std::log10(45.0), std::log10(25.0), std::log10(75.0)};
  EXPECT_NEAR(r.mean.value, (l[0] + l[1] + l[2] + l[3]) / 4, 1e-12);
  EXPECT_NEAR(Find(r, "memory").q.value, (-l[0] + l[1] - l[2] + l[3]) / 4, 1e-12);
  // 15/45 = 25/75: in the multiplicative model memory and cache do not interact.
  EXPECT_NEAR(Find(r, "memory*cache").q.value, 0, 1e-12);
  EXPECT_TRUE(r.log10);
}

TEST(Effects, BadRequests) {
  AnalyzeRequest req;
  req.force = AnalyzeRequest::Force::kSignTable;
  Builder b;
  for (int p = 0; p < 3; ++p) b.Add(p, 0, "{\"p\": " + std::to_string(p) + "}", p);
  EXPECT_NE(AnalyzeError(b.rows, req).find("two-level"), std::string::npos);
  AnalyzeRequest conf;
  conf.analysis.confidence = 1.5;
  EXPECT_NE(AnalyzeError(b.rows, conf).find("confidence"), std::string::npos);
  Builder constant;
  constant.Add(0, 0, R"({"p": 1})", 1);
  constant.Add(0, 1, R"({"p": 1})", 2);
  EXPECT_NE(AnalyzeError(constant.rows).find("no factor varies"), std::string::npos);
  Builder mismatch = Jain2x2();
  mismatch.rows[1].factors = nlohmann::ordered_json::parse(R"({"memory": 16})");
  EXPECT_NE(AnalyzeError(mismatch.rows).find("run id 2 (point 1, replication 0) has factors"),
            std::string::npos);
}

TEST(Effects, GroupSignColumnsRejectsIrregularSets) {
  std::vector<AliasGroup> groups;
  Fraction fr;
  // Three of four points of a 2^2: not a fraction.
  EXPECT_FALSE(GroupSignColumns({{0, 0}, {1, 0}, {0, 1}}, 2, &groups, &fr));
  // Two points that differ in both factors: the half fraction I = -A*B... of a 2^2.
  ASSERT_TRUE(GroupSignColumns({{0, 0}, {1, 1}}, 2, &groups, &fr));
  EXPECT_EQ(fr.p, 1);
  ASSERT_EQ(fr.defining_relation.size(), 1u);
  EXPECT_EQ(fr.defining_relation[0], std::make_pair(3u, 1));
}

}  // namespace
}  // namespace invmw::effects

namespace invmw::effects {
namespace {

// The shape of the Opal design (3 sizes x 2 update settings x 2 cut-offs x 7 server counts),
// unreplicated, with the four-factor interaction pooled into the error (Jain ch. 23): the
// allocation is complete, every effect sums to zero over each of its indices, and the pooled
// error equals the four-factor SS computed by hand.
TEST(Effects, OpalShapedFourFactorDesign) {
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> u(0, 0.05);
  const int N[3] = {500, 1000, 2000};
  const double U[2] = {0.5, 1};
  const int RC[2] = {0, 10};
  Builder b;
  double y[3][2][2][7];
  int point = 0;
  for (int p = 0; p < 7; ++p)
    for (int c = 0; c < 2; ++c)
      for (int up = 0; up < 2; ++up)
        for (int n = 0; n < 3; ++n, ++point) {
          double v = N[n] * (c ? 0.3 : 1.0) / 1000.0 / (p + 1) * (1 + U[up]) + 0.01 * p + u(rng);
          y[n][up][c][p] = v;
          nlohmann::ordered_json f = {{"n", N[n]}, {"u", U[up]}, {"rc", RC[c]}, {"p", p + 1}};
          b.Add(point, 0, f.dump(), v, "t_wall");
        }
  AnalyzeRequest req;
  req.analysis.max_order = 3;
  const ResponseEffects r = Analyze(b.rows, req).responses[0];
  EXPECT_EQ(r.terms.size(), 14u);  // 2^4 - 1 terms, the 4-factor one pooled
  EXPECT_EQ(r.dof_error, 2 * 1 * 1 * 6);
  double total = r.error_variation;
  for (const Term& t : r.terms) {
    total += t.variation;
    // Each effect sums to zero over every one of its indices, whatever the others are.
    for (size_t i = 0; i < t.cells.size(); ++i) {
      for (size_t dim = 0; dim < t.cells[i].levels.size(); ++dim) {
        if (t.cells[i].levels[dim] != 0) continue;
        double sum = 0;
        for (const auto& c : t.cells) {
          bool same = true;
          for (size_t d = 0; d < c.levels.size(); ++d)
            same = same && (d == dim || c.levels[d] == t.cells[i].levels[d]);
          if (same) sum += c.effect.value;
        }
        EXPECT_NEAR(sum, 0, 1e-12) << t.name;
      }
    }
  }
  EXPECT_NEAR(total, 100, 1e-9);
  // Four-factor interaction by hand, with all the marginal means it needs.
  auto mean = [&](int n, int up, int c, int p) {  // -1 = averaged over that factor
    double s = 0;
    int k = 0;
    for (int a = 0; a < 3; ++a)
      for (int bb = 0; bb < 2; ++bb)
        for (int cc = 0; cc < 2; ++cc)
          for (int d = 0; d < 7; ++d)
            if ((n < 0 || a == n) && (up < 0 || bb == up) && (c < 0 || cc == c) &&
                (p < 0 || d == p)) {
              s += y[a][bb][cc][d];
              ++k;
            }
    return s / k;
  };
  double ss4 = 0;
  for (int a = 0; a < 3; ++a)
    for (int bb = 0; bb < 2; ++bb)
      for (int c = 0; c < 2; ++c)
        for (int d = 0; d < 7; ++d) {
          double e = 0;
          for (int mask = 0; mask < 16; ++mask) {  // inclusion-exclusion over the 16 subsets
            int kept = __builtin_popcount(mask);
            double m =
                mean(mask & 1 ? a : -1, mask & 2 ? bb : -1, mask & 4 ? c : -1, mask & 8 ? d : -1);
            e += ((4 - kept) % 2 ? -m : m);
          }
          ss4 += e * e;
        }
  EXPECT_NEAR(r.sse, ss4, 1e-9);
  EXPECT_GT(Find(r, "p").variation, 10);  // the server count matters in this model
}

}  // namespace
}  // namespace invmw::effects
