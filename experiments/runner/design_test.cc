// Design files: expansion of full and fractional designs, the alias algebra on Jain's examples,
// the run order, and the errors for broken files.
#include "experiments/runner/design.h"

#include <gtest/gtest.h>

#include <filesystem>

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
  // Inputs next to the design file: its directory, absolute.
  EXPECT_EQ(Substitute("{design_dir}/in.melt", v),
            std::filesystem::current_path().string() + "/in.melt");
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

// Names that become path components: the platform of the file (the design name has its own
// rule) must be a plain name, so that no run directory and no reset reaches outside the runs
// directory.
TEST(Design, PlatformMustBeAPlainName) {
  const std::string rest =
      "responses = [\"t_wall\"]\n[[factor]]\nname = \"p\"\nlevels = [1, 2]\n"
      "[command]\nprogram = \"echo\"\n";
  for (const char* bad : {"/abs", "../x", "..", ".", "a/b", "", "x y"}) {
    try {
      ParseDesign("name = \"x\"\nplatform = \"" + std::string(bad) + "\"\n" + rest, "x.toml");
      ADD_FAILURE() << "platform '" << bad << "' accepted";
    } catch (const DesignError& e) {
      EXPECT_EQ(e.field, "platform") << e.what();
      EXPECT_EQ(e.line, 2) << e.what();
      EXPECT_NE(std::string(e.what()).find("is not a platform name"), std::string::npos)
          << e.what();
    }
  }
  try {
    ParseDesign("name = \"" + std::string(129, 'd') + "\"\n" + rest, "x.toml");
    ADD_FAILURE() << "a 129-character design name accepted";
  } catch (const DesignError& e) {
    EXPECT_EQ(e.field, "name") << e.what();
  }
  for (const char* good : {"local", "emu-4x50-shm", "cluster_2.1"})
    EXPECT_EQ(
        ParseDesign("name = \"x\"\nplatform = \"" + std::string(good) + "\"\n" + rest, "x.toml")
            .platform,
        good);
}

std::string LoadError(const std::string& text) {
  try {
    ParseDesign(text, "x.toml");
  } catch (const DesignError& e) {
    return e.what();
  }
  return "loaded";
}

std::string Factors(int k, int levels) {
  std::string s;
  for (int i = 0; i < k; ++i) {
    s += "[[factor]]\nname = \"f" + std::to_string(i) + "\"\nlevels = [";
    for (int l = 0; l < levels; ++l) s += (l ? ", " : "") + std::to_string(l);
    s += "]\n";
  }
  return s;
}

// 10^16 points printed a negative count; 2^22 points died of bad_alloc. Counts are 64-bit and
// refused above the stated maxima, naming the factors' level counts.
TEST(Design, SizesAreCountedIn64BitsAndBounded) {
  const std::string head = "name = \"x\"\nresponses = [\"t_wall\"]\n";
  const std::string cmd = "[command]\nprogram = \"echo\"\n";
  Design big;
  for (int i = 0; i < 16; ++i) {
    Factor f;
    f.levels.resize(10);
    big.factors.push_back(f);
  }
  EXPECT_EQ(big.NumPoints(), 10000000000000000LL);
  for (int i = 0; i < 10; ++i) big.factors.push_back(big.factors[0]);  // 10^26: saturates
  EXPECT_EQ(big.NumPoints(), INT64_MAX);
  EXPECT_EQ(big.NumRuns(), INT64_MAX);

  std::string e = LoadError(head + Factors(16, 10) + cmd);
  EXPECT_NE(e.find("field 'factor': the design has 10000000000000000 points (levels f0: 10 x "
                   "f1: 10 x"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("at most 100000"), std::string::npos) << e;
  e = LoadError(head + Factors(22, 2) + cmd);
  EXPECT_NE(e.find("4194304 points"), std::string::npos) << e;
  e = LoadError(head + "type = \"fractional\"\ngenerators = [\"f20 = f0*f1\", \"f21 = f2*f3\"]\n" +
                Factors(22, 2) + cmd);
  EXPECT_NE(e.find("1048576 points (2^(22-2) fractional design)"), std::string::npos) << e;
  e = LoadError(head + "replications = 10000\n" + Factors(3, 10) + cmd);
  EXPECT_NE(e.find("x.toml:3: field 'replications': 1000 points (levels f0: 10 x f1: 10 x f2: "
                   "10) x 10000 replications = 10000000 runs; at most 1000000"),
            std::string::npos)
      << e;
  EXPECT_EQ(LoadError(head + Factors(5, 10) + cmd), "loaded");  // 100000 points: the maximum
  EXPECT_NE(LoadError(head + "timeout = 1e9\n" + Factors(1, 2) + cmd).find("at most 1000000 s"),
            std::string::npos);
}

// `ranks = "1/0"` became `-np inf`, a negative expression a negative rank count.
TEST(Design, DerivedValuesAreFiniteAndRanksAWholeCount) {
  const std::string head =
      "name = \"x\"\nresponses = [\"t_wall\"]\n[[factor]]\nname = \"p\"\nlevels = [1, 3]\n";
  auto with_ranks = [&](const std::string& r) {
    return LoadError(head + "[command]\nprogram = \"echo\"\nranks = \"" + r + "\"\n");
  };
  std::string e = with_ranks("1/0");
  EXPECT_NE(e.find("x.toml:8: field 'command.ranks': '1/0' is inf at point 0 {\"p\":1.0}; "
                   "expected a finite number"),
            std::string::npos)
      << e;
  e = with_ranks("p - 2");
  EXPECT_NE(e.find("'p - 2' is -1 at point 0"), std::string::npos) << e;
  EXPECT_NE(e.find("ranks must be a whole number from 1 to 65536"), std::string::npos) << e;
  EXPECT_NE(with_ranks("p / 2").find("'p / 2' is 0.5 at point 0"), std::string::npos);
  EXPECT_NE(with_ranks("p * 100000").find("is 100000 at point 0"), std::string::npos);
  EXPECT_NE(with_ranks("0/0").find("expected a finite number"), std::string::npos);
  EXPECT_EQ(with_ranks("p + 1"), "loaded");
  e = LoadError(head + "[derived]\nq = \"1/(p - 3)\"\n[command]\nprogram = \"echo\"\n");
  EXPECT_NE(e.find("x.toml:7: field 'derived.q': '1/(p - 3)' is inf at point 1 {\"p\":3.0}"),
            std::string::npos)
      << e;
}

TEST(Design, RecordedDerivedValuesAreWrittenWithTheFactors) {
  const std::string head =
      "name = \"x\"\nresponses = [\"t_wall\"]\n[[factor]]\nname = \"n\"\nlevels = [1000, "
      "3000]\n[derived]\ns = \"30 * max(1, ceil(4 / (n / 1000)^2))\"\nk = \"n + 1\"\n";
  const std::string cmd = "[command]\nprogram = \"echo\"\nargs = [\"{s}\"]\n";
  Design d = ParseDesign("recorded = [\"s\"]\n" + head + cmd, "x.toml");
  auto pts = ExpandPoints(d);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[0].FactorsJson(d), R"({"n":1000.0,"s":120.0})");
  EXPECT_EQ(pts[1].FactorsJson(d), R"({"n":3000.0,"s":30.0})");
  // Without the key, rows keep only the factors (existing databases stay "already done").
  Design plain = ParseDesign(head + cmd, "x.toml");
  EXPECT_EQ(ExpandPoints(plain)[0].FactorsJson(plain), R"({"n":1000.0})");
  std::string e = LoadError("recorded = [\"q\"]\n" + head + cmd);
  EXPECT_NE(e.find("x.toml:1: field 'recorded[0]': 'q' is not a derived value"), std::string::npos)
      << e;
  e = LoadError("recorded = [\"s\", \"s\"]\n" + head + cmd);
  EXPECT_NE(e.find("duplicate name 's'"), std::string::npos) << e;
  e = LoadError("recorded = \"s\"\n" + head + cmd);
  EXPECT_NE(e.find("field 'recorded': expected an array"), std::string::npos) << e;
}

}  // namespace
}  // namespace invmw::experiment
