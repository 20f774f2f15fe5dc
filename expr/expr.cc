#include "expr/expr.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

namespace invmw::expr {

namespace {

enum class Tok { kNum, kName, kOp, kEnd };

struct Token {
  Tok kind;
  std::string text;
  double num = 0;
  int line = 1, column = 1;
};

// Splits the text into tokens, tracking line and column so every error can point at its token.
std::vector<Token> Lex(const std::string& s) {
  std::vector<Token> out;
  int line = 1, col = 1;
  size_t i = 0;
  auto advance = [&](size_t k) {
    for (size_t j = 0; j < k; ++j) {
      if (s[i + j] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    i += k;
  };
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    Token t{Tok::kOp, "", 0, line, col};
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      const char* begin = s.c_str() + i;
      char* end = nullptr;
      t.num = std::strtod(begin, &end);
      size_t len = static_cast<size_t>(end - begin);
      // A number glued to letters ("3x", "1e") is a bad token, not an implicit product.
      size_t stop = i + len;
      while (stop < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[stop])) || s[stop] == '_'))
        ++stop;
      t.text = s.substr(i, stop - i);
      if (stop != i + len) throw ExprError("bad number '" + t.text + "'", line, col, t.text);
      // 1e999 would silently become inf and poison every residual.
      if (!std::isfinite(t.num))
        throw ExprError("number '" + t.text + "' is out of range (not a finite double)", line, col,
                        t.text);
      t.kind = Tok::kNum;
      advance(len);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      t.kind = Tok::kName;
      t.text = s.substr(i, j - i);
      advance(j - i);
    } else {
      static const char* kTwo[] = {"<=", ">=", "==", "!=", "&&", "||", "**"};
      std::string two = s.substr(i, 2);
      bool matched = false;
      for (const char* op : kTwo) {
        if (two == op) {
          t.text = two == "**" ? "^" : two;
          advance(2);
          matched = true;
          break;
        }
      }
      if (!matched) {
        if (std::string("+-*/^(),<>!").find(c) == std::string::npos) {
          throw ExprError(std::string("unexpected character '") + c + "'", line, col,
                          std::string(1, c));
        }
        t.text = std::string(1, c);
        advance(1);
      }
    }
    out.push_back(t);
  }
  out.push_back(Token{Tok::kEnd, "", 0, line, col});
  return out;
}

}  // namespace

class ExprParser {
 public:
  ExprParser(Expr* e, const std::string& text, const Expr::Resolver& r)
      : e_(e), toks_(Lex(text)), resolve_(r) {}

  int ParseAll() {
    if (Peek().kind == Tok::kEnd) Error("empty expression", Peek());
    int root = Or();
    if (Peek().kind != Tok::kEnd) Error("unexpected '" + Peek().text + "'", Peek());
    return root;
  }

 private:
  const Token& Peek() const { return toks_[pos_]; }
  const Token& Next() { return toks_[pos_++]; }
  bool Accept(const char* op) {
    if (Peek().kind == Tok::kOp && Peek().text == op) {
      ++pos_;
      return true;
    }
    return false;
  }
  [[noreturn]] void Error(const std::string& msg, const Token& t) {
    throw ExprError(msg, t.line, t.column, t.kind == Tok::kEnd ? "end of expression" : t.text);
  }
  void Expect(const char* op) {
    if (!Accept(op)) {
      const Token& t = Peek();
      Error(std::string("expected '") + op + "' but found " +
                (t.kind == Tok::kEnd ? std::string("end of expression") : "'" + t.text + "'"),
            t);
    }
  }
  // Every node goes through here, so no input can build a tree that overflows the stack when
  // evaluated or fill memory.
  int Add(const ExprNode& n) {
    const Token& at = toks_[pos_ > 0 ? pos_ - 1 : 0];
    if (e_->nodes_.size() >= Expr::kMaxNodes) {
      Error("expression has more than " + std::to_string(Expr::kMaxNodes) +
                " nodes (after inlining definitions) at column " + std::to_string(at.column),
            at);
    }
    int i = e_->Append(n);
    if (e_->nodes_[i].depth > Expr::kMaxDepth) {
      Error("expression nests deeper than " + std::to_string(Expr::kMaxDepth) +
                " levels (after inlining definitions; every operator of a chain counts) at "
                "column " +
                std::to_string(at.column),
            at);
    }
    return i;
  }
  int Bin(Op op, int a, int b) {
    ExprNode n;
    n.op = op;
    n.a = a;
    n.b = b;
    return Add(n);
  }
  // Counts the recursion through Unary(), which every nesting construct passes: parentheses and
  // function arguments (via Or), unary operators and the right side of '^'.
  struct Nest {
    explicit Nest(ExprParser* p) : p_(p) {
      if (++p_->depth_ > Expr::kMaxNesting) {
        const Token& t = p_->Peek();
        p_->Error("nesting deeper than " + std::to_string(Expr::kMaxNesting) + " at column " +
                      std::to_string(t.column),
                  t);
      }
    }
    ~Nest() { --p_->depth_; }
    ExprParser* p_;
  };

  int Or() {
    int l = And();
    while (Accept("||")) l = Bin(Op::kOr, l, And());
    return l;
  }
  int And() {
    int l = Cmp();
    while (Accept("&&")) l = Bin(Op::kAnd, l, Cmp());
    return l;
  }
  int Cmp() {
    int l = Sum();
    static const std::pair<const char*, Op> kOps[] = {{"<=", Op::kLe}, {">=", Op::kGe},
                                                      {"<", Op::kLt},  {">", Op::kGt},
                                                      {"==", Op::kEq}, {"!=", Op::kNe}};
    for (const auto& [text, op] : kOps) {
      if (Accept(text)) return Bin(op, l, Sum());
    }
    return l;
  }
  int Sum() {
    int l = Prod();
    for (;;) {
      if (Accept("+")) {
        l = Bin(Op::kAdd, l, Prod());
      } else if (Accept("-")) {
        l = Bin(Op::kSub, l, Prod());
      } else {
        return l;
      }
    }
  }
  int Prod() {
    int l = Unary();
    for (;;) {
      if (Accept("*")) {
        l = Bin(Op::kMul, l, Unary());
      } else if (Accept("/")) {
        l = Bin(Op::kDiv, l, Unary());
      } else {
        return l;
      }
    }
  }
  int Unary() {
    Nest nest(this);
    if (Accept("-")) return Bin(Op::kNeg, Unary(), -1);
    if (Accept("+")) return Unary();
    if (Accept("!")) return Bin(Op::kNot, Unary(), -1);
    return Power();
  }
  int Power() {
    int base = Atom();
    if (Accept("^")) return Bin(Op::kPow, base, Unary());
    return base;
  }
  int Atom() {
    const Token& t = Next();
    if (t.kind == Tok::kNum) {
      ExprNode n;
      n.op = Op::kConst;
      n.value = t.num;
      return Add(n);
    }
    if (t.kind == Tok::kOp && t.text == "(") {
      int inner = Or();
      Expect(")");
      return inner;
    }
    if (t.kind != Tok::kName) {
      Error(t.kind == Tok::kEnd ? "expression ends where a value was expected"
                                : "unexpected '" + t.text + "' where a value was expected",
            t);
    }
    if (Peek().kind == Tok::kOp && Peek().text == "(") return Call(t);
    Expr::Symbol sym = resolve_(t.text);
    switch (sym.kind) {
      case 1:
      case 2: {
        ExprNode n;
        n.op = sym.kind == 1 ? Op::kFactor : Op::kParam;
        n.slot = sym.slot;
        return Add(n);
      }
      case 3: {
        const Expr& sub = *sym.inline_expr;
        if (e_->nodes_.size() + sub.nodes_.size() > Expr::kMaxNodes) {
          Error("expression has more than " + std::to_string(Expr::kMaxNodes) +
                    " nodes after inlining '" + t.text + "' at column " + std::to_string(t.column),
                t);
        }
        // CopyFrom recurses as deep as the definition's tree, which its own parse bounded.
        return e_->CopyFrom(sub, sub.root_);
      }
      default:
        Error("unknown symbol '" + t.text + "'", t);
    }
  }
  int Call(const Token& name) {
    Expect("(");
    std::vector<int> args;
    if (!Accept(")")) {
      do {
        args.push_back(Or());
      } while (Accept(","));
      Expect(")");
    }
    static const std::map<std::string, std::pair<Op, int>> kFuncs = {
        {"sqrt", {Op::kSqrt, 1}}, {"log", {Op::kLog, 1}},   {"exp", {Op::kExp, 1}},
        {"abs", {Op::kAbs, 1}},   {"ceil", {Op::kCeil, 1}}, {"floor", {Op::kFloor, 1}},
        {"pow", {Op::kPow, 2}},   {"if", {Op::kIf, 3}},     {"min", {Op::kMin, -2}},
        {"max", {Op::kMax, -2}}};
    auto it = kFuncs.find(name.text);
    if (it == kFuncs.end()) Error("unknown function '" + name.text + "'", name);
    auto [op, arity] = it->second;
    if (arity < 0) {
      if (args.size() < static_cast<size_t>(-arity)) {
        Error(name.text + "() needs at least 2 arguments, got " + std::to_string(args.size()),
              name);
      }
      int acc = args[0];
      for (size_t k = 1; k < args.size(); ++k) acc = Bin(op, acc, args[k]);
      return acc;
    }
    if (args.size() != static_cast<size_t>(arity)) {
      Error(name.text + "() takes " + std::to_string(arity) + " argument" +
                (arity == 1 ? "" : "s") + ", got " + std::to_string(args.size()),
            name);
    }
    ExprNode n;
    n.op = op;
    n.a = args[0];
    if (arity > 1) n.b = args[1];
    if (arity > 2) n.c = args[2];
    return Add(n);
  }

  Expr* e_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  const Expr::Resolver& resolve_;
};

Expr Expr::Parse(const std::string& text, const Resolver& resolve) {
  Expr e;
  e.text_ = text;
  ExprParser p(&e, text, resolve);
  e.root_ = p.ParseAll();
  return e;
}

int Expr::CopyFrom(const Expr& other, int node) {
  ExprNode n = other.nodes_[node];
  if (n.a >= 0) n.a = CopyFrom(other, n.a);
  if (n.b >= 0) n.b = CopyFrom(other, n.b);
  if (n.c >= 0) n.c = CopyFrom(other, n.c);
  return Append(n);
}

std::vector<int> Expr::FactorSlots() const {
  std::set<int> s;
  for (const auto& n : nodes_)
    if (n.op == Op::kFactor) s.insert(n.slot);
  return {s.begin(), s.end()};
}

std::vector<int> Expr::ParamSlots() const {
  std::set<int> s;
  for (const auto& n : nodes_)
    if (n.op == Op::kParam) s.insert(n.slot);
  return {s.begin(), s.end()};
}

std::vector<int> Expr::DomainParamSlots() const {
  std::set<int> out;
  if (root_ < 0) return {};
  // An explicit stack: the walk must not recurse once per level of a (bounded, but deep) tree.
  std::vector<std::pair<int, bool>> todo = {{root_, false}};
  while (!todo.empty()) {
    auto [i, sensitive] = todo.back();
    todo.pop_back();
    if (i < 0) continue;
    const ExprNode& n = nodes_[i];
    if (n.op == Op::kParam && sensitive) out.insert(n.slot);
    bool integer_pow = n.op == Op::kPow && nodes_[n.b].op == Op::kConst &&
                       nodes_[n.b].value == std::floor(nodes_[n.b].value) && nodes_[n.b].value >= 0;
    bool a_sens =
        sensitive || n.op == Op::kLog || n.op == Op::kSqrt || (n.op == Op::kPow && !integer_pow);
    bool b_sens = sensitive || n.op == Op::kDiv;
    todo.push_back({n.a, a_sens});
    todo.push_back({n.b, b_sens});
    todo.push_back({n.c, sensitive});
  }
  return {out.begin(), out.end()};
}

}  // namespace invmw::expr
