// Model expressions: the small arithmetic language in which model files state response times.
//
// Why a tree evaluated for any scalar type: the fitter needs exact derivatives, so the same
// expression is evaluated over double (prediction, residual statistics) and over ceres::Jet
// (automatic differentiation inside Ceres). An expression is parsed once into a flat node
// array; evaluation walks it recursively and never allocates.
//
// Grammar (lowest to highest precedence):
//   or    := and ('||' and)*
//   and   := cmp ('&&' cmp)*
//   cmp   := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)?
//   sum   := prod (('+' | '-') prod)*
//   prod  := unary (('*' | '/') unary)*
//   unary := ('-' | '+' | '!') unary | power
//   power := atom ('^' unary)?                 (right associative: 2^3^2 = 2^9, -x^2 = -(x^2))
//   atom  := NUMBER | NAME | NAME '(' or (',' or)* ')' | '(' or ')'
// Functions: sqrt log exp abs ceil floor pow(a,b) min(a,b,...) max(a,b,...) if(cond,then,else).
// Comparisons yield 1 or 0; in a condition any non-zero value is true. ceil/floor have zero
// derivative (they are piecewise constant), as do the branch choices of if/min/max.
//
// Limits: parsing and evaluation recurse, so text from a file or the command line is bounded
// before it can overflow the stack: parentheses, function arguments, unary operators and powers
// nest at most kMaxNesting levels, the tree (after inlining definitions, and counting every
// operator of a chain like a+b+c) is at most kMaxDepth deep, and holds at most kMaxNodes nodes
// (definitions inlined into each other can otherwise grow exponentially). A number literal must
// be finite.
//
// Contract: names are resolved while parsing through a caller-supplied resolver that maps a
// name to a symbol slot (a factor or a parameter) or to an already-parsed sub-expression that
// is inlined (model definitions and components). Errors carry the 1-based line and column of
// the offending token within the source text given to the parser, plus the bad token itself.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace invmw::expr {

// A parse error with position inside the expression text (1-based) and the offending token.
struct ExprError : std::runtime_error {
  ExprError(const std::string& msg, int line, int column, std::string token)
      : std::runtime_error(msg), line(line), column(column), token(std::move(token)) {}
  int line, column;
  std::string token;
};

enum class Op {
  kConst,
  kFactor,  // slot indexes the factor values
  kParam,   // slot indexes the parameter values
  kNeg,
  kNot,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kSqrt,
  kLog,
  kExp,
  kAbs,
  kCeil,
  kFloor,
  kMin,
  kMax,
  kLt,
  kLe,
  kGt,
  kGe,
  kEq,
  kNe,
  kAnd,
  kOr,
  kIf,
};

struct ExprNode {
  Op op = Op::kConst;
  double value = 0;  // kConst
  int slot = -1;     // kFactor / kParam
  int a = -1, b = -1, c = -1;
  int depth = 1;  // of the subtree rooted here; bounded by Expr::kMaxDepth
};

class Expr {
 public:
  // What a name means while parsing. kind: 0 unknown, 1 factor, 2 parameter, 3 sub-expression.
  struct Symbol {
    int kind = 0;
    int slot = -1;
    const Expr* inline_expr = nullptr;
  };
  using Resolver = std::function<Symbol(const std::string& name)>;

  static constexpr int kMaxNesting = 200;
  static constexpr int kMaxDepth = 1000;
  static constexpr size_t kMaxNodes = 100000;

  // Parses text. Throws ExprError on a syntax error or unknown name.
  static Expr Parse(const std::string& text, const Resolver& resolve);

  // Evaluates with factor values (always double) and parameter values of type T.
  template <typename T>
  T Eval(const double* factors, const T* params) const {
    return EvalNode<T>(root_, factors, params);
  }

  bool empty() const { return root_ < 0; }
  // Slots of the factors / parameters the expression reads (sorted, unique).
  std::vector<int> FactorSlots() const;
  std::vector<int> ParamSlots() const;
  // Parameters that appear in a divisor, under log or sqrt, or in the base of a non-integer
  // power: fitting them without a lower bound can step onto a pole or outside the domain.
  std::vector<int> DomainParamSlots() const;
  const std::string& text() const { return text_; }

 private:
  friend class ExprParser;
  int Append(ExprNode n) {
    // Children are always appended before their parent, so their depths are known.
    n.depth = 1;
    for (int k : {n.a, n.b, n.c})
      if (k >= 0) n.depth = std::max(n.depth, nodes_[k].depth + 1);
    nodes_.push_back(n);
    return static_cast<int>(nodes_.size()) - 1;
  }
  int CopyFrom(const Expr& other, int node);  // inlines a sub-expression, returns new root

  template <typename T>
  bool Truth(int i, const double* f, const T* p) const {
    return EvalNode<T>(i, f, p) != T(0.0);
  }

  template <typename T>
  T EvalNode(int i, const double* f, const T* p) const {
    using std::abs;
    using std::ceil;
    using std::exp;
    using std::floor;
    using std::log;
    using std::pow;
    using std::sqrt;
    const ExprNode& n = nodes_[i];
    switch (n.op) {
      case Op::kConst:
        return T(n.value);
      case Op::kFactor:
        return T(f[n.slot]);
      case Op::kParam:
        return p[n.slot];
      case Op::kNeg:
        return -EvalNode<T>(n.a, f, p);
      case Op::kNot:
        return Truth<T>(n.a, f, p) ? T(0.0) : T(1.0);
      case Op::kAdd:
        return EvalNode<T>(n.a, f, p) + EvalNode<T>(n.b, f, p);
      case Op::kSub:
        return EvalNode<T>(n.a, f, p) - EvalNode<T>(n.b, f, p);
      case Op::kMul:
        return EvalNode<T>(n.a, f, p) * EvalNode<T>(n.b, f, p);
      case Op::kDiv:
        return EvalNode<T>(n.a, f, p) / EvalNode<T>(n.b, f, p);
      case Op::kPow: {
        // A constant integer exponent keeps derivatives finite at a zero or negative base.
        const ExprNode& e = nodes_[n.b];
        if (e.op == Op::kConst && e.value == std::floor(e.value) && std::fabs(e.value) <= 16) {
          T base = EvalNode<T>(n.a, f, p), r = T(1.0);
          for (int k = 0; k < static_cast<int>(std::fabs(e.value)); ++k) r = r * base;
          return e.value < 0 ? T(1.0) / r : r;
        }
        return pow(EvalNode<T>(n.a, f, p), EvalNode<T>(n.b, f, p));
      }
      case Op::kSqrt:
        return sqrt(EvalNode<T>(n.a, f, p));
      case Op::kLog:
        return log(EvalNode<T>(n.a, f, p));
      case Op::kExp:
        return exp(EvalNode<T>(n.a, f, p));
      case Op::kAbs:
        return abs(EvalNode<T>(n.a, f, p));
      case Op::kCeil:
        return ceil(EvalNode<T>(n.a, f, p));
      case Op::kFloor:
        return floor(EvalNode<T>(n.a, f, p));
      case Op::kMin: {
        T x = EvalNode<T>(n.a, f, p), y = EvalNode<T>(n.b, f, p);
        return y < x ? y : x;
      }
      case Op::kMax: {
        T x = EvalNode<T>(n.a, f, p), y = EvalNode<T>(n.b, f, p);
        return y > x ? y : x;
      }
      case Op::kLt:
        return EvalNode<T>(n.a, f, p) < EvalNode<T>(n.b, f, p) ? T(1.0) : T(0.0);
      case Op::kLe:
        return EvalNode<T>(n.a, f, p) <= EvalNode<T>(n.b, f, p) ? T(1.0) : T(0.0);
      case Op::kGt:
        return EvalNode<T>(n.a, f, p) > EvalNode<T>(n.b, f, p) ? T(1.0) : T(0.0);
      case Op::kGe:
        return EvalNode<T>(n.a, f, p) >= EvalNode<T>(n.b, f, p) ? T(1.0) : T(0.0);
      case Op::kEq:
        return EvalNode<T>(n.a, f, p) == EvalNode<T>(n.b, f, p) ? T(1.0) : T(0.0);
      case Op::kNe:
        return EvalNode<T>(n.a, f, p) != EvalNode<T>(n.b, f, p) ? T(1.0) : T(0.0);
      case Op::kAnd:
        return Truth<T>(n.a, f, p) && Truth<T>(n.b, f, p) ? T(1.0) : T(0.0);
      case Op::kOr:
        return Truth<T>(n.a, f, p) || Truth<T>(n.b, f, p) ? T(1.0) : T(0.0);
      case Op::kIf:
        return Truth<T>(n.a, f, p) ? EvalNode<T>(n.b, f, p) : EvalNode<T>(n.c, f, p);
    }
    return T(0.0);
  }

  std::vector<ExprNode> nodes_;
  int root_ = -1;
  std::string text_;
};

}  // namespace invmw::expr
