// Design files: expansion of full and fractional designs, the alias algebra on Jain's examples,
// the run order, and the errors for broken files.
#include "experiments/runner/design.h"

#include <gtest/gtest.h>

#include <set>

namespace invmw::experiment {
namespace {

const std::string kTestdata = INVMW_RUNNER_TESTDATA;
const std::string kDesigns = INVMW_DESIGNS_DIR;

std::string AliasLine(const Design& d, Effect e) {
  for (const auto& set : Aliases(d).alias_sets) {
    bool has = false;
    for (const auto& x : set) has |= x.effect == e;
    if (!has) continue;
    std::string s;
    for (const auto& x : set) s += (s.empty() ? "" : " = ") + EffectName(x.effect, x.sign);
    return s;
  }
  return "";
}

TEST(Design, OpalFullIsTheFullFactorialOf84Runs) {
  Design d = LoadDesign(kDesigns + "/opal-full.toml");
  EXPECT_FALSE(d.fractional);
  ASSERT_EQ(d.factors.size(), 4u);
  EXPECT_EQ(d.NumPoints(), 3 * 2 * 2 * 7);
  EXPECT_EQ(d.NumRuns(), 84 * d.replications);
  std::vector<Point> pts = ExpandPoints(d);
  ASSERT_EQ(pts.size(), 84u);
  // Every combination exactly once.
  std::set<std::string> combos;
  for (const auto& p : pts) combos.insert(p.FactorsJson(d));
  EXPECT_EQ(combos.size(), 84u);
  // Standard order: the first factor varies fastest, the last slowest.
  EXPECT_EQ(pts[0].levels[0].Text(), d.factors[0].levels[0].Text());
  EXPECT_EQ(pts[1].levels[0].Text(), d.factors[0].levels[1].Text());
  EXPECT_EQ(pts[1].levels[3].Text(), d.factors[3].levels[0].Text());
  EXPECT_EQ(pts[12].levels[3].Text(), d.factors[3].levels[1].Text());
  // ranks = p + 1 for every point.
  for (const auto& p : pts) {
    double servers = 0;
    for (size_t i = 0; i < d.factors.size(); ++i)
      if (d.factors[i].name == "p") servers = p.levels[i].number;
    EXPECT_EQ(p.derived.at("ranks"), servers + 1);
  }
}

TEST(Design, MixedLevelCountsAndNamedLevels) {
  Design d = ParseDesign(R"(
name = "mixed"
responses = ["t_wall"]
[[factor]]
name = "mpi"
levels = ["openmpi", "mpich"]
[[factor]]
name = "p"
levels = [1, 2, 4]
[derived]
twice = "2 * p"
more = "twice + 1"
[command]
ranks = "p + 1"
program = "echo"
args = ["{mpi}", "{more}", "{ranks}", "{{literal}}"]
)",
                         "mixed.toml");
  EXPECT_EQ(d.NumPoints(), 6);
  Point p = PointAt(d, 5);  // mpi = mpich, p = 4
  EXPECT_EQ(p.levels[0].Text(), "mpich");
  EXPECT_EQ(p.levels[1].Text(), "4");
  EXPECT_EQ(p.derived.at("more"), 9);
  EXPECT_EQ(p.derived.at("ranks"), 5);
  EXPECT_EQ(p.FactorsJson(d), R"({"mpi":"mpich","p":4.0})");
  auto v = PlaceholderValues(d, p, 0, "/tmp/x", "/bin");
  EXPECT_EQ(Substitute(d.command.args[1], v), "9");
  EXPECT_EQ(Substitute(d.command.args[3], v), "{literal}");
}

// Jain, section 19.1: the 2^(7-4) design with D = AB, E = AC, F = BC, G = ABC.
TEST(Fractional, Jain_2_7_4_ConfoundingAndResolution) {
  Design d = LoadDesign(kTestdata + "/jain_2_7_4.toml");
  ASSERT_TRUE(d.fractional);
  EXPECT_EQ(d.NumPoints(), 8);
  AliasStructure a = Aliases(d);
  EXPECT_EQ(a.resolution, 3);
  EXPECT_EQ(RomanResolution(a.resolution), "III");
  ASSERT_EQ(a.defining_relation.size(), 16u);
  std::set<std::string> words;
  for (const auto& w : a.defining_relation) words.insert(EffectName(w.effect, w.sign));
  for (const char* w : {"I", "ABD", "ACE", "BCF", "ABCG", "BCDE", "ACDF", "CDG", "ABEF", "BEG",
                        "AFG", "DEF", "ADEG", "BDFG", "CEFG", "ABCDEFG"})
    EXPECT_TRUE(words.count(w)) << w;
  ASSERT_EQ(a.alias_sets.size(), 8u);
  for (const auto& set : a.alias_sets) EXPECT_EQ(set.size(), 16u);
  // Each main effect is confounded with three two-factor interactions.
  EXPECT_EQ(AliasLine(d, 0b1).substr(0, 18), "A = BD = CE = FG =");
  EXPECT_EQ(AliasLine(d, 0b10).substr(0, 18), "B = AD = CF = EG =");
  EXPECT_EQ(AliasLine(d, 0b100).substr(0, 18), "C = AE = BF = DG =");
  // The sign table's column AB estimates D and its aliases.
  EXPECT_EQ(AliasLine(d, 0b11).substr(0, 18), "D = AB = CG = EF =");
  // The 8 points: the base factors in standard order, D..G from their generators.
  const int expect[8][7] = {{-1, -1, -1, 1, 1, 1, -1}, {1, -1, -1, -1, -1, 1, 1},
                            {-1, 1, -1, -1, 1, -1, 1}, {1, 1, -1, 1, -1, -1, -1},
                            {-1, -1, 1, 1, -1, -1, 1}, {1, -1, 1, -1, 1, -1, -1},
                            {-1, 1, 1, -1, -1, 1, -1}, {1, 1, 1, 1, 1, 1, 1}};
  for (int i = 0; i < 8; ++i) {
    Point p = PointAt(d, i);
    for (int f = 0; f < 7; ++f) EXPECT_EQ(p.levels[f].number, expect[i][f]) << i << " " << f;
  }
}

TEST(Fractional, ResolutionIVAndNegativeGenerator) {
  std::vector<Generator> g = {{3, 0b0111, 1, "D = ABC", 1}};
  AliasStructure a = ComputeAliases(4, g);
  EXPECT_EQ(a.resolution, 4);
  ASSERT_EQ(a.alias_sets.size(), 8u);
  EXPECT_EQ(EffectName(a.alias_sets[3][0].effect), "AB");  // AB = CD
  EXPECT_EQ(EffectName(a.alias_sets[3][1].effect), "CD");
  // 2^(5-1) with E = -ABCD: resolution V, I = -ABCDE.
  std::vector<Generator> g5 = {{4, 0b01111, -1, "E = -ABCD", 1}};
  AliasStructure a5 = ComputeAliases(5, g5);
  EXPECT_EQ(a5.resolution, 5);
  EXPECT_EQ(EffectName(a5.defining_relation[1].effect, a5.defining_relation[1].sign), "-ABCDE");
}

TEST(Design, SmokeIsA2_4_1OfResolutionIV) {
  Design d = LoadDesign(kDesigns + "/smoke.toml");
  EXPECT_EQ(d.NumPoints(), 8);
  EXPECT_EQ(Aliases(d).resolution, 4);
  for (const auto& p : ExpandPoints(d)) {
    // s is high exactly when an even number of n, rc, u are low (s = n*rc*u).
    int low = 0;
    for (int f = 0; f < 3; ++f) low += p.levels[f].number == d.factors[f].levels[0].number;
    EXPECT_EQ(p.levels[3].number == d.factors[3].levels[1].number, low % 2 == 0);
  }
}

TEST(Design, RunOrderIsASeededPermutation) {
  Design d = LoadDesign(kDesigns + "/opal-full.toml");
  d.replications = 2;
  auto a = RunOrder(d), b = RunOrder(d);
  ASSERT_EQ(a.size(), 168u);
  std::set<std::pair<int, int>> seen;
  bool same = true, sorted = true;
  for (size_t i = 0; i < a.size(); ++i) {
    seen.insert({a[i].point, a[i].replication});
    same = same && a[i].point == b[i].point && a[i].replication == b[i].replication;
    sorted = sorted && a[i].point == static_cast<int>(i % 84);
  }
  EXPECT_EQ(seen.size(), 168u);
  EXPECT_TRUE(same);
  EXPECT_FALSE(sorted);
  d.seed += 1;
  auto c = RunOrder(d);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs |= a[i].point != c[i].point;
  EXPECT_TRUE(differs);
}

// Each broken file: the error names the file, the line and the field.
struct BadCase {
  const char* file;
  int line;
  const char* field;
  const char* words;
};

TEST(Design, BadFilesNameLineAndField) {
  const BadCase cases[] = {
      {"bad_template.toml", 16, "command.args[3]", "unknown factor {cutoff}"},
      {"bad_zero_levels.toml", 10, "factor[1].levels", "zero levels"},
      {"bad_duplicate.toml", 9, "factor[1].name", "duplicate factor name 'n'"},
      {"bad_generator.toml", 4, "generators[1]", "'E' is not a factor"},
  };
  for (const auto& c : cases) {
    try {
      LoadDesign(kTestdata + "/" + c.file);
      ADD_FAILURE() << c.file << " loaded";
    } catch (const DesignError& e) {
      EXPECT_EQ(e.line, c.line) << e.what();
      EXPECT_EQ(e.field, c.field) << e.what();
      std::string msg = e.what();
      EXPECT_NE(msg.find(kTestdata + "/" + c.file + ":" + std::to_string(c.line) + ": field '" +
                         c.field + "'"),
                std::string::npos)
          << msg;
      EXPECT_NE(msg.find(c.words), std::string::npos) << msg;
    }
  }
}

TEST(Design, MoreErrors) {
  auto error = [](const std::string& text) {
    try {
      ParseDesign(text, "x.toml");
    } catch (const DesignError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  const std::string head = "name = \"x\"\nresponses = [\"t_wall\"]\n";
  const std::string cmd = "[command]\nprogram = \"echo\"\n";
  EXPECT_NE(
      error(head + "[[factor]]\nname = \"p\"\nlevels = [1, 2]\n[derived]\nr = \"q + 1\"\n" + cmd)
          .find("x.toml:7: field 'derived.r'"),
      std::string::npos);
  EXPECT_NE(error(head + "type = \"fractional\"\n[[factor]]\nname = \"p\"\nlevels = [1, 2, 3]\n" +
                  "[[factor]]\nname = \"q\"\nlevels = [1, 2]\n" + cmd)
                .find("exactly 2 levels"),
            std::string::npos);
  EXPECT_NE(
      error(head + "[[factor]]\nname = \"p\"\nlevels = [1, 1]\n" + cmd).find("duplicate level 1"),
      std::string::npos);
  EXPECT_NE(error(head + "[[factor]]\nname = \"p\"\nlevels = [1, \"a\"]\n" + cmd)
                .find("all be numbers or all be names"),
            std::string::npos);
  EXPECT_NE(error(head + "frobnicate = 1\n[[factor]]\nname = \"p\"\nlevels = [1]\n" + cmd)
                .find("x.toml:3: field 'frobnicate': unknown key"),
            std::string::npos);
  EXPECT_NE(error("name = \"x\"\n[[factor]]\nname = \"p\"\nlevels = [1]\n" + cmd)
                .find("field 'responses': missing"),
            std::string::npos);
  EXPECT_NE(error(head + "[[factor]]\nname = \"p\"\nlevels = [1, 2\n").find("TOML syntax error"),
            std::string::npos);
}

}  // namespace
}  // namespace invmw::experiment
