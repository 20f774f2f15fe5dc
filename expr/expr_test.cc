#include "expr/expr.h"

#include <ceres/jet.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace invmw::expr {
namespace {

// Factors x, y (slots 0, 1); parameters a, b, c (slots 0, 1, 2).
Expr::Symbol Resolve(const std::string& n) {
  static const std::map<std::string, Expr::Symbol> kSyms = {{"x", {1, 0, nullptr}},
                                                            {"y", {1, 1, nullptr}},
                                                            {"a", {2, 0, nullptr}},
                                                            {"b", {2, 1, nullptr}},
                                                            {"c", {2, 2, nullptr}}};
  auto it = kSyms.find(n);
  return it == kSyms.end() ? Expr::Symbol{} : it->second;
}

double Eval(const std::string& text, double x = 2, double y = 3, double a = 5, double b = 7,
            double c = 11) {
  double f[] = {x, y};
  double p[] = {a, b, c};
  return Expr::Parse(text, Resolve).Eval<double>(f, p);
}

TEST(Expr, ArithmeticAndPrecedence) {
  EXPECT_DOUBLE_EQ(Eval("1 + 2*3"), 7);
  EXPECT_DOUBLE_EQ(Eval("(1 + 2)*3"), 9);
  EXPECT_DOUBLE_EQ(Eval("2^3^2"), 512);  // right associative
  EXPECT_DOUBLE_EQ(Eval("-x^2"), -4);    // unary minus binds looser than ^
  EXPECT_DOUBLE_EQ(Eval("2^-1"), 0.5);
  EXPECT_DOUBLE_EQ(Eval("x**3"), 8);
  EXPECT_DOUBLE_EQ(Eval("a - b - c"), 5 - 7 - 11);
  EXPECT_DOUBLE_EQ(Eval("a / b / c"), 5.0 / 7 / 11);
  EXPECT_DOUBLE_EQ(Eval("1.5e-3 * 2"), 3e-3);
  EXPECT_DOUBLE_EQ(Eval(".5 + x"), 2.5);
}

TEST(Expr, FunctionsAndConditions) {
  EXPECT_DOUBLE_EQ(Eval("sqrt(16) + log(exp(2)) + abs(-3)"), 4 + 2 + 3);
  EXPECT_DOUBLE_EQ(Eval("ceil(x/y) + floor(b/x)"), 1 + 3);
  EXPECT_DOUBLE_EQ(Eval("min(a, b, 1, c)"), 1);
  EXPECT_DOUBLE_EQ(Eval("max(a, b, c)"), 11);
  EXPECT_DOUBLE_EQ(Eval("pow(x, 0.5)"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(Eval("if(x < y, a, b)"), 5);
  EXPECT_DOUBLE_EQ(Eval("if(x >= y, a, b)"), 7);
  EXPECT_DOUBLE_EQ(Eval("if(x < y && a > b, 1, 2)"), 2);
  EXPECT_DOUBLE_EQ(Eval("if(x < y || a > b, 1, 2)"), 1);
  EXPECT_DOUBLE_EQ(Eval("if(!(x == 2), 1, 2)"), 2);
  EXPECT_DOUBLE_EQ(Eval("(x != y) + (x <= 2) + (y > 3)"), 2);
}

TEST(Expr, ErrorsNameLineColumnAndToken) {
  try {
    Expr::Parse("a + bogus * 2", Resolve);
    FAIL() << "no error";
  } catch (const ExprError& e) {
    EXPECT_EQ(e.line, 1);
    EXPECT_EQ(e.column, 5);
    EXPECT_EQ(e.token, "bogus");
    EXPECT_NE(std::string(e.what()).find("unknown symbol 'bogus'"), std::string::npos);
  }
  try {
    Expr::Parse("a +\n  x $ 2", Resolve);
    FAIL() << "no error";
  } catch (const ExprError& e) {
    EXPECT_EQ(e.line, 2);
    EXPECT_EQ(e.column, 5);
    EXPECT_EQ(e.token, "$");
  }
  EXPECT_THROW(Expr::Parse("a +", Resolve), ExprError);
  EXPECT_THROW(Expr::Parse("(a + b", Resolve), ExprError);
  EXPECT_THROW(Expr::Parse("a b", Resolve), ExprError);
  EXPECT_THROW(Expr::Parse("3x", Resolve), ExprError);
  EXPECT_THROW(Expr::Parse("sqrt(a, b)", Resolve), ExprError);
  EXPECT_THROW(Expr::Parse("min(a)", Resolve), ExprError);
  EXPECT_THROW(Expr::Parse("frobnicate(a)", Resolve), ExprError);
  EXPECT_THROW(Expr::Parse("", Resolve), ExprError);
}

TEST(Expr, DomainSlots) {
  Expr e = Expr::Parse("a / (b * x) + sqrt(c) + a^2", Resolve);
  EXPECT_EQ(e.DomainParamSlots(), (std::vector<int>{1, 2}));
  EXPECT_EQ(e.ParamSlots(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(e.FactorSlots(), (std::vector<int>{0}));
}

// Automatic derivatives against central finite differences, on expressions that use every
// differentiable operation.
TEST(Expr, JetDerivativesMatchFiniteDifferences) {
  const char* exprs[] = {
      "a * x^2 + b / (c + y)",
      "sqrt(a*b) * log(c) + exp(-a/10)",
      "pow(a, 1.5) - b^-2 + abs(c - 20)",
      "if(x < y, a*b*x, c) + min(a, b) * max(b, c)",
      "a * ceil(x/y) * 3 + (a + b + c)^3 / 1000",
      "b1*(1 - exp(-b2*x))",
  };
  using J = ceres::Jet<double, 3>;
  double f[] = {2, 3};
  double p[] = {5, 7, 11};
  for (const char* text : exprs) {
    std::string t = text;
    // Reuse a, b for b1, b2.
    for (auto [from, to] : {std::pair<std::string, std::string>{"b1", "a"}, {"b2", "b"}}) {
      for (size_t pos; (pos = t.find(from)) != std::string::npos;) t.replace(pos, 2, to);
    }
    Expr e = Expr::Parse(t, Resolve);
    J pj[3];
    for (int i = 0; i < 3; ++i) pj[i] = J(p[i], i);
    J r = e.Eval<J>(f, pj);
    EXPECT_DOUBLE_EQ(r.a, e.Eval<double>(f, p)) << t;
    for (int i = 0; i < 3; ++i) {
      double h = 1e-6 * std::fabs(p[i]);
      double up[3] = {p[0], p[1], p[2]}, dn[3] = {p[0], p[1], p[2]};
      up[i] += h;
      dn[i] -= h;
      double fd = (e.Eval<double>(f, up) - e.Eval<double>(f, dn)) / (2 * h);
      EXPECT_NEAR(r.v[i], fd, 1e-6 * std::max(1.0, std::fabs(fd))) << t << " d/dp" << i;
    }
  }
}

TEST(Expr, IntegerPowerAtNegativeBaseHasFiniteDerivative) {
  using J = ceres::Jet<double, 3>;
  Expr e = Expr::Parse("(a - 10)^2", Resolve);
  double f[] = {0, 0};
  J pj[3] = {J(5.0, 0), J(0.0, 1), J(0.0, 2)};
  J r = e.Eval<J>(f, pj);
  EXPECT_DOUBLE_EQ(r.a, 25);
  EXPECT_DOUBLE_EQ(r.v[0], -10);
}

std::string ParseError(const std::string& text) {
  try {
    Expr::Parse(text, Resolve);
  } catch (const ExprError& e) {
    return e.what();
  }
  return "";
}

// Issue 16, item 7: ~30000 nested parentheses, unary minuses or powers overflowed the stack of
// the recursive-descent parser; now the parser stops at a stated depth.
TEST(Expr, DeepNestingIsRefusedNotACrash) {
  const int kDeep = 30000;
  std::string parens = std::string(kDeep, '(') + "x" + std::string(kDeep, ')');
  EXPECT_EQ(ParseError(parens), "nesting deeper than 200 at column 201");
  EXPECT_NE(ParseError(std::string(kDeep, '-') + "x").find("nesting deeper than 200"),
            std::string::npos);
  std::string pow = "x";
  for (int i = 0; i < kDeep; ++i) pow += "^x";
  EXPECT_NE(ParseError(pow).find("nesting deeper than 200"), std::string::npos);
  std::string call = "x";
  for (int i = 0; i < kDeep; ++i) call = "abs(" + call;
  call += std::string(kDeep, ')');
  EXPECT_NE(ParseError(call).find("nesting deeper than 200"), std::string::npos);
  // Just inside the limit everything still works.
  std::string ok = std::string(199, '(') + "x" + std::string(199, ')');
  EXPECT_DOUBLE_EQ(Eval(ok), 2);
  EXPECT_DOUBLE_EQ(Eval(std::string(198, '-') + "x"), 2);
}

// A flat chain a+a+...+a is parsed by a loop but builds a tree as deep as it is long, which the
// recursive evaluation would then overflow.
TEST(Expr, LongOperatorChainsAreBounded) {
  std::string sum = "x";
  for (int i = 0; i < 200000; ++i) sum += "+x";
  std::string e = ParseError(sum);
  EXPECT_NE(e.find("nests deeper than 1000 levels"), std::string::npos) << e.substr(0, 200);
  std::string fine = "x";
  for (int i = 0; i < 900; ++i) fine += "+x";
  EXPECT_DOUBLE_EQ(Eval(fine), 2 * 901);
}

TEST(Expr, NumberLiteralsMustBeFinite) {
  EXPECT_NE(ParseError("x * 1e999").find("number '1e999' is out of range"), std::string::npos);
}

}  // namespace
}  // namespace invmw::expr
