#include "jinja/parser.h"

#include <algorithm>
#include <set>

#include "jinja/builtins.h"
#include "jinja/error.h"
#include "jinja/py_string.h"

namespace folio::jinja {

namespace {

bool is_op(const Token& t, std::string_view op) {
  return t.type == TokenType::kOperator && t.value == op;
}
bool is_name(const Token& t, std::string_view name) {
  return t.type == TokenType::kName && t.value == name;
}

// jinja2's describe_token.
std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::kName:
    case TokenType::kOperator:
      return t.value;
    case TokenType::kData:
      return "template data / text";
    case TokenType::kVarBegin:
      return "begin of print statement";
    case TokenType::kVarEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kString:
      return "string";
    case TokenType::kInteger:
      return "integer";
    case TokenType::kFloat:
      return "float";
    case TokenType::kEof:
      return "end of template";
  }
  return "token";
}

std::string quoted(std::string_view s) {
  std::string out;
  py::append_repr(&out, s);
  return out;
}

class Parser {
 public:
  Parser(std::string_view source, const std::vector<Token>& tokens) : src_(source), toks_(tokens) {}

  Body parse() {
    Body body = subparse(nullptr);
    // Unknown filters / tests outside soft frames fail the compilation, after
    // the whole template parsed (as jinja2's code generator does).
    for (const auto& u : unknown_) {
      if (!u.soft) fail_at(u.pos, u.message, ErrorKind::kAssertion);
    }
    return body;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return toks_[i_]; }
  const Token& look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[i_];
    if (i_ + 1 < toks_.size()) ++i_;
    return t;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(cur(), op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(cur(), name)) return false;
    next();
    return true;
  }

  [[noreturn]] void fail_at(uint32_t pos, std::string message,
                            ErrorKind kind = ErrorKind::kSyntax) const {
    JinjaError e(kind, std::move(message));
    int line, col;
    offset_to_position(src_, pos, &line, &col);
    e.set_position(line, col);
    throw e;
  }
  [[noreturn]] void fail(std::string message) const { fail_at(cur().pos, std::move(message)); }

  [[noreturn]] void fail_expect(const std::string& what) const {
    if (cur().type == TokenType::kEof)
      fail(fmt::format("unexpected end of template, expected {}.", quoted(what)));
    fail(fmt::format("expected token {}, got {}", quoted(what), quoted(describe(cur()))));
  }
  const Token& expect_op(std::string_view op) {
    if (!is_op(cur(), op)) fail_expect(std::string(op));
    return next();
  }
  const Token& expect_name() {
    if (cur().type != TokenType::kName) fail_expect("name");
    return next();
  }
  const Token& expect_name(std::string_view name) {
    if (!is_name(cur(), name)) fail_expect(std::string(name));
    return next();
  }
  const Token& expect_type(TokenType type, const char* what) {
    if (cur().type != type) fail_expect(what);
    return next();
  }

  // ---- nesting guard ----
  struct Depth {
    explicit Depth(Parser* p) : p_(p) {
      if (++p_->depth_ > kMaxNesting) {
        p_->fail(fmt::format("template nesting deeper than {} levels", kMaxNesting));
      }
    }
    ~Depth() { --p_->depth_; }
    Parser* p_;
  };

  // A scope that is (not) a "soft frame" (inside if / conditional
  // expressions); for-loop, macro, call and filter bodies start hard frames.
  struct Soft {
    Soft(Parser* p, bool soft) : p_(p), saved_(p->soft_) { p_->soft_ = soft; }
    ~Soft() { p_->soft_ = saved_; }
    Parser* p_;
    bool saved_;
  };
  struct LoopDepth {
    LoopDepth(Parser* p, int value) : p_(p), saved_(p->loop_depth_) { p_->loop_depth_ = value; }
    ~LoopDepth() { p_->loop_depth_ = saved_; }
    Parser* p_;
    int saved_;
  };

  // Records the height of a composite node; long chains (a.b.c..., x|f|f...,
  // 1+1+1...) are bounded here, so evaluating or destroying a tree cannot
  // exhaust the stack.
  ExprPtr seal(ExprPtr e) const {
    int d = 0;
    for (const auto& a : e->args) {
      if (a) d = std::max<int>(d, a->depth);
    }
    for (const auto& kv : e->kwargs) d = std::max<int>(d, kv.second->depth);
    if (e->dyn_args) d = std::max<int>(d, e->dyn_args->depth);
    if (e->dyn_kwargs) d = std::max<int>(d, e->dyn_kwargs->depth);
    if (d + 1 > kMaxExprDepth)
      fail_at(e->pos, fmt::format("expression nested deeper than {} levels", kMaxExprDepth));
    e->depth = static_cast<uint16_t>(d + 1);
    return e;
  }

  static ExprPtr make(ExprKind kind, uint32_t pos) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = pos;
    return e;
  }

  // ---- statements ----
  using EndTokens = std::vector<std::string>;

  Body subparse(const EndTokens* end_tokens) {
    Depth depth(this);
    Body body;
    if (end_tokens) end_stack_.push_back(*end_tokens);
    StmtPtr output;
    auto flush = [&]() {
      if (output) body.push_back(std::move(output));
      output.reset();
    };
    auto out_stmt = [&](uint32_t pos) -> Stmt& {
      if (!output) {
        output = std::make_unique<Stmt>();
        output->kind = StmtKind::kOutput;
        output->pos = pos;
      }
      return *output;
    };
    while (cur().type != TokenType::kEof) {
      const Token& t = cur();
      if (t.type == TokenType::kData) {
        out_stmt(t.pos).output.push_back(OutputItem{t.value, nullptr});
        next();
      } else if (t.type == TokenType::kVarBegin) {
        next();
        ExprPtr e = parse_tuple(false, true, {}, false, false);
        out_stmt(t.pos).output.push_back(OutputItem{{}, std::move(e)});
        expect_type(TokenType::kVarEnd, "end of print statement");
      } else if (t.type == TokenType::kBlockBegin) {
        flush();
        next();
        if (end_tokens && cur().type == TokenType::kName &&
            std::find(end_tokens->begin(), end_tokens->end(), cur().value) != end_tokens->end()) {
          end_stack_.pop_back();
          return body;
        }
        parse_statement(&body);
        expect_type(TokenType::kBlockEnd, "end of statement block");
      } else {
        fail("internal parsing error");
      }
    }
    flush();
    if (end_tokens) end_stack_.pop_back();
    return body;
  }

  Body parse_statements(const EndTokens& end_tokens, bool drop_needle) {
    skip_op(":");
    expect_type(TokenType::kBlockEnd, "end of statement block");
    Body body = subparse(&end_tokens);
    if (cur().type == TokenType::kEof) fail_eof(&end_tokens);
    if (drop_needle) next();
    return body;
  }

  [[noreturn]] void fail_unknown(const std::string* name, std::vector<EndTokens> stack,
                                 uint32_t pos) {
    std::set<std::string> expected;
    for (const auto& ts : stack) expected.insert(ts.begin(), ts.end());
    std::string looking;
    if (!stack.empty()) {
      for (const auto& t : stack.back()) {
        if (!looking.empty()) looking += " or ";
        looking += quoted(t);
      }
    }
    std::string msg = name ? fmt::format("Encountered unknown tag {}.", quoted(*name))
                           : "Unexpected end of template.";
    if (!looking.empty()) {
      if (name && expected.count(*name)) {
        msg += fmt::format(
            " You probably made a nesting mistake. Jinja is expecting this tag, but currently "
            "looking for {}.",
            looking);
      } else {
        msg += fmt::format(" Jinja was looking for the following tags: {}.", looking);
      }
    }
    if (!tag_stack_.empty())
      msg += fmt::format(" The innermost block that needs to be closed is {}.",
                         quoted(tag_stack_.back()));
    fail_at(pos, msg);
  }
  [[noreturn]] void fail_eof(const EndTokens* end_tokens) {
    std::vector<EndTokens> stack = end_stack_;
    if (end_tokens) stack.push_back(*end_tokens);
    fail_unknown(nullptr, stack, cur().pos);
  }

  void parse_statement(Body* body) {
    const Token& t = cur();
    if (t.type != TokenType::kName) fail("tag name expected");
    std::string tag = t.value;
    uint32_t pos = t.pos;
    static const std::set<std::string> kKnown = {"for",   "if",       "set",       "macro",
                                                 "call",  "filter",   "with",      "print",
                                                 "break", "continue", "generation"};
    static const std::set<std::string> kUnsupported = {"block",  "extends", "include",
                                                       "import", "from",    "autoescape"};
    if (kUnsupported.count(tag)) {
      fail_at(pos,
              fmt::format("the {} tag is not supported (templates are rendered without a loader)",
                          quoted(tag)),
              ErrorKind::kUnsupported);
    }
    if (!kKnown.count(tag)) fail_unknown(&tag, end_stack_, pos);
    tag_stack_.push_back(tag);
    StmtPtr s;
    if (tag == "for") {
      s = parse_for();
    } else if (tag == "if") {
      s = parse_if();
    } else if (tag == "set") {
      s = parse_set();
    } else if (tag == "macro") {
      s = parse_macro();
    } else if (tag == "call") {
      s = parse_call_block();
    } else if (tag == "filter") {
      s = parse_filter_block();
    } else if (tag == "with") {
      s = parse_with();
    } else if (tag == "print") {
      s = parse_print();
    } else if (tag == "generation") {
      next();
      s = std::make_unique<Stmt>();
      s->kind = StmtKind::kScope;
      Soft soft(this, false);
      s->body = parse_statements({"endgeneration"}, true);
    } else {  // break / continue
      next();
      if (loop_depth_ == 0) fail_at(pos, fmt::format("{} outside loop", quoted(tag)));
      s = std::make_unique<Stmt>();
      s->kind = tag == "break" ? StmtKind::kBreak : StmtKind::kContinue;
    }
    s->pos = pos;
    tag_stack_.pop_back();
    body->push_back(std::move(s));
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kFor;
    expect_name("for");
    s->target = parse_assign_target(true, false, {"in"}, false);
    expect_name("in");
    s->expr = parse_tuple(false, false, {"recursive"}, false, false);
    Soft soft(this, false);
    LoopDepth loop(this, loop_depth_ + 1);
    if (skip_name("if")) s->test = parse_expression(true);
    s->recursive = skip_name("recursive");
    s->body = parse_statements({"endfor", "else"}, false);
    if (next().value != "endfor") {
      LoopDepth outer(this, loop_depth_ - 1);
      s->else_body = parse_statements({"endfor"}, true);
    }
    return s;
  }

  StmtPtr parse_if() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kIf;
    expect_name("if");
    Soft soft(this, true);
    while (true) {
      ExprPtr test = parse_tuple(false, false, {}, false, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      s->branches.emplace_back(std::move(test), std::move(body));
      const Token& t = next();
      if (t.value == "elif") continue;
      if (t.value == "else") s->else_body = parse_statements({"endif"}, true);
      break;
    }
    return s;
  }

  StmtPtr parse_set() {
    auto s = std::make_unique<Stmt>();
    next();
    s->target = parse_assign_target(true, false, {}, true);
    if (skip_op("=")) {
      s->kind = StmtKind::kSet;
      s->expr = parse_tuple(false, true, {}, false, false);
      return s;
    }
    s->kind = StmtKind::kSetBlock;
    s->expr = parse_filter(nullptr, false);
    Soft soft(this, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(MacroDef* m) {
    expect_op("(");
    while (!is_op(cur(), ")")) {
      if (!m->params.empty()) expect_op(",");
      const Token& name = expect_name();
      if (skip_op("=")) {
        m->defaults.push_back(parse_expression(true));
      } else if (!m->defaults.empty()) {
        fail("non-default argument follows default argument");
      }
      m->params.push_back(name.value);
    }
    expect_op(")");
  }

  StmtPtr parse_macro() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kMacro;
    next();
    auto m = std::make_shared<MacroDef>();
    m->name = expect_name().value;
    Soft soft(this, false);
    LoopDepth loop(this, 0);
    open_macros_.push_back(m.get());
    parse_signature(m.get());
    m->body = parse_statements({"endmacro"}, true);
    open_macros_.pop_back();
    s->macro = std::move(m);
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kCallBlock;
    uint32_t pos = next().pos;
    auto m = std::make_shared<MacroDef>();
    m->name = "caller";
    {
      Soft soft(this, false);
      open_macros_.push_back(m.get());
      if (is_op(cur(), "(")) parse_signature(m.get());
      open_macros_.pop_back();
    }
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::kCall) fail_at(pos, "expected call");
    Soft soft(this, false);
    LoopDepth loop(this, 0);
    open_macros_.push_back(m.get());
    m->body = parse_statements({"endcall"}, true);
    open_macros_.pop_back();
    s->macro = std::move(m);
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kFilterBlock;
    next();
    Soft soft(this, false);
    s->expr = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kWith;
    next();
    while (cur().type != TokenType::kBlockEnd) {
      if (!s->targets.empty()) expect_op(",");
      s->targets.push_back(parse_assign_target(true, false, {}, false));
      expect_op("=");
      s->values.push_back(parse_expression(true));
    }
    Soft soft(this, false);
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  StmtPtr parse_print() {
    auto s = std::make_unique<Stmt>();
    s->kind = StmtKind::kOutput;
    next();
    while (cur().type != TokenType::kBlockEnd) {
      if (!s->output.empty()) expect_op(",");
      s->output.push_back(OutputItem{{}, parse_expression(true)});
    }
    return s;
  }

  static bool can_assign(const Expr& e) {
    if (e.kind == ExprKind::kName || e.kind == ExprKind::kNSRef) return true;
    if (e.kind == ExprKind::kTuple) {
      return std::all_of(e.args.begin(), e.args.end(),
                         [](const ExprPtr& a) { return can_assign(*a); });
    }
    return false;
  }

  static std::string node_name(const Expr& e) {
    switch (e.kind) {
      case ExprKind::kConst:
        return "const";
      case ExprKind::kList:
        return "list";
      case ExprKind::kDict:
        return "dict";
      case ExprKind::kTuple:
        return "tuple";
      default:
        return "expression";
    }
  }

  ExprPtr parse_assign_target(bool with_tuple, bool name_only, const EndTokens& extra_end,
                              bool with_namespace) {
    ExprPtr target;
    if (name_only) {
      const Token& t = expect_name();
      target = make(ExprKind::kName, t.pos);
      target->name = t.value;
    } else if (with_tuple) {
      target = parse_tuple(true, true, extra_end, false, with_namespace);
    } else {
      target = parse_primary(with_namespace);
    }
    if (!can_assign(*target))
      fail_at(target->pos, fmt::format("can't assign to {}", quoted(node_name(*target))));
    return target;
  }

  // ---- expressions ----
  ExprPtr parse_expression(bool with_condexpr) {
    Depth depth(this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    uint32_t pos = cur().pos;
    size_t mark = unknown_.size();
    ExprPtr expr1 = parse_or();
    while (is_name(cur(), "if")) {
      next();
      Soft soft(this, true);
      // Everything in a conditional expression is a soft frame, also expr1,
      // which was parsed before the `if` showed it.
      for (size_t k = mark; k < unknown_.size(); ++k) unknown_[k].soft = true;
      ExprPtr expr2 = parse_or();
      ExprPtr expr3;
      if (skip_name("else")) expr3 = parse_condexpr();
      auto e = make(ExprKind::kCondExpr, pos);
      e->args.push_back(std::move(expr2));
      e->args.push_back(std::move(expr1));
      e->args.push_back(std::move(expr3));
      expr1 = seal(std::move(e));
      pos = cur().pos;
    }
    return expr1;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name(cur(), "or")) {
      uint32_t pos = next().pos;
      auto e = make(ExprKind::kOr, pos);
      e->args.push_back(std::move(left));
      e->args.push_back(parse_and());
      left = seal(std::move(e));
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name(cur(), "and")) {
      uint32_t pos = next().pos;
      auto e = make(ExprKind::kAnd, pos);
      e->args.push_back(std::move(left));
      e->args.push_back(parse_not());
      left = seal(std::move(e));
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name(cur(), "not")) {
      Depth depth(this);
      uint32_t pos = next().pos;
      auto e = make(ExprKind::kNot, pos);
      e->args.push_back(parse_not());
      return seal(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    uint32_t pos = cur().pos;
    ExprPtr expr = parse_math1();
    std::vector<CmpOp> ops;
    std::vector<ExprPtr> operands;
    while (true) {
      const Token& t = cur();
      CmpOp op;
      if (is_op(t, "==")) {
        op = CmpOp::kEq;
      } else if (is_op(t, "!=")) {
        op = CmpOp::kNe;
      } else if (is_op(t, "<")) {
        op = CmpOp::kLt;
      } else if (is_op(t, "<=")) {
        op = CmpOp::kLe;
      } else if (is_op(t, ">")) {
        op = CmpOp::kGt;
      } else if (is_op(t, ">=")) {
        op = CmpOp::kGe;
      } else if (is_name(t, "in")) {
        op = CmpOp::kIn;
      } else if (is_name(t, "not") && is_name(look(), "in")) {
        next();
        op = CmpOp::kNotIn;
      } else {
        break;
      }
      next();
      ops.push_back(op);
      operands.push_back(parse_math1());
    }
    if (ops.empty()) return expr;
    auto e = make(ExprKind::kCompare, pos);
    e->args.push_back(std::move(expr));
    for (auto& o : operands) e->args.push_back(std::move(o));
    e->cmp = std::move(ops);
    return seal(std::move(e));
  }

  ExprPtr binary(BinOp op, uint32_t pos, ExprPtr left, ExprPtr right) {
    auto e = make(ExprKind::kBinary, pos);
    e->op = op;
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return seal(std::move(e));
  }

  ExprPtr parse_math1() {
    uint32_t pos = cur().pos;
    ExprPtr left = parse_concat();
    while (is_op(cur(), "+") || is_op(cur(), "-")) {
      BinOp op = cur().value == "+" ? BinOp::kAdd : BinOp::kSub;
      next();
      left = binary(op, pos, std::move(left), parse_concat());
      pos = cur().pos;
    }
    return left;
  }

  ExprPtr parse_concat() {
    uint32_t pos = cur().pos;
    ExprPtr first = parse_math2();
    if (!is_op(cur(), "~")) return first;
    auto e = make(ExprKind::kConcat, pos);
    e->args.push_back(std::move(first));
    while (skip_op("~")) e->args.push_back(parse_math2());
    return seal(std::move(e));
  }

  ExprPtr parse_math2() {
    uint32_t pos = cur().pos;
    ExprPtr left = parse_pow();
    while (true) {
      BinOp op;
      if (is_op(cur(), "*")) {
        op = BinOp::kMul;
      } else if (is_op(cur(), "/")) {
        op = BinOp::kDiv;
      } else if (is_op(cur(), "//")) {
        op = BinOp::kFloorDiv;
      } else if (is_op(cur(), "%")) {
        op = BinOp::kMod;
      } else {
        break;
      }
      next();
      left = binary(op, pos, std::move(left), parse_pow());
      pos = cur().pos;
    }
    return left;
  }

  ExprPtr parse_pow() {
    uint32_t pos = cur().pos;
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) {
      left = binary(BinOp::kPow, pos, std::move(left), parse_unary(true));
      pos = cur().pos;
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    const Token& t = cur();
    ExprPtr node;
    if (is_op(t, "-") || is_op(t, "+")) {
      Depth depth(this);
      ExprKind kind = t.value == "-" ? ExprKind::kNeg : ExprKind::kPos;
      uint32_t pos = next().pos;
      node = make(kind, pos);
      node->args.push_back(parse_unary(false));
      node = seal(std::move(node));
    } else {
      node = parse_primary(false);
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary(bool with_namespace) {
    const Token& t = cur();
    ExprPtr node;
    if (t.type == TokenType::kName) {
      next();
      const std::string& v = t.value;
      if (v == "true" || v == "false" || v == "True" || v == "False") {
        node = make(ExprKind::kConst, t.pos);
        node->value = Value::boolean(v == "true" || v == "True");
      } else if (v == "none" || v == "None") {
        node = make(ExprKind::kConst, t.pos);
        node->value = Value::none();
      } else if (with_namespace && is_op(cur(), ".")) {
        next();
        const Token& attr = expect_name();
        node = make(ExprKind::kNSRef, t.pos);
        node->name = v;
        node->name2 = attr.value;
      } else {
        node = make(ExprKind::kName, t.pos);
        node->name = v;
        if (v == "varargs" || v == "kwargs" || v == "caller") {
          for (MacroDef* m : open_macros_) {
            if (v == "varargs") m->catch_varargs = true;
            if (v == "kwargs") m->catch_kwargs = true;
            if (v == "caller") m->caller = true;
          }
        }
      }
    } else if (t.type == TokenType::kString) {
      std::string buf;
      uint32_t pos = t.pos;
      while (cur().type == TokenType::kString) buf += next().value;
      node = make(ExprKind::kConst, pos);
      node->value = Value::string(std::move(buf));
    } else if (t.type == TokenType::kInteger || t.type == TokenType::kFloat) {
      next();
      node = make(ExprKind::kConst, t.pos);
      node->value = t.type == TokenType::kInteger ? Value::integer(t.int_value)
                                                  : Value::floating(t.float_value);
    } else if (is_op(t, "(")) {
      next();
      node = parse_tuple(false, true, {}, true, false);
      expect_op(")");
    } else if (is_op(t, "[")) {
      node = parse_list();
    } else if (is_op(t, "{")) {
      node = parse_dict();
    } else {
      fail(fmt::format("unexpected {}", quoted(describe(t))));
    }
    return node;
  }

  bool is_tuple_end(const EndTokens& extra_end) const {
    const Token& t = cur();
    if (t.type == TokenType::kVarEnd || t.type == TokenType::kBlockEnd || is_op(t, ")"))
      return true;
    for (const auto& e : extra_end) {
      if (is_name(t, e)) return true;
    }
    return false;
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const EndTokens& extra_end,
                      bool explicit_parens, bool with_namespace) {
    uint32_t pos = cur().pos;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary(with_namespace) : parse_expression(with_condexpr));
      if (is_op(cur(), ",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parens)
        fail(fmt::format("Expected an expression, got {}", quoted(describe(cur()))));
    }
    auto e = make(ExprKind::kTuple, pos);
    e->args = std::move(args);
    return seal(std::move(e));
  }

  ExprPtr parse_list() {
    uint32_t pos = expect_op("[").pos;
    auto e = make(ExprKind::kList, pos);
    while (!is_op(cur(), "]")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op(cur(), "]")) break;
      e->args.push_back(parse_expression(true));
    }
    expect_op("]");
    return seal(std::move(e));
  }

  ExprPtr parse_dict() {
    uint32_t pos = expect_op("{").pos;
    auto e = make(ExprKind::kDict, pos);
    while (!is_op(cur(), "}")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op(cur(), "}")) break;
      e->args.push_back(parse_expression(true));
      expect_op(":");
      e->args.push_back(parse_expression(true));
    }
    expect_op("}");
    return seal(std::move(e));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(cur(), ".") || is_op(cur(), "[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op(cur(), "(")) {
        node = parse_call(std::move(node));
      } else {
        break;
      }
    }
    return node;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op(cur(), "|")) {
        node = parse_filter(std::move(node), false);
      } else if (is_name(cur(), "is")) {
        node = parse_test(std::move(node));
      } else if (is_op(cur(), "(")) {
        node = parse_call(std::move(node));
      } else {
        break;
      }
    }
    return node;
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& t = next();
    if (t.value == ".") {
      const Token& attr = next();
      if (attr.type == TokenType::kName) {
        auto e = make(ExprKind::kGetattr, t.pos);
        e->name = attr.value;
        e->args.push_back(std::move(node));
        return seal(std::move(e));
      }
      if (attr.type != TokenType::kInteger) fail_at(attr.pos, "expected name or number");
      auto key = make(ExprKind::kConst, attr.pos);
      key->value = Value::integer(attr.int_value);
      auto e = make(ExprKind::kGetitem, t.pos);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(key));
      return seal(std::move(e));
    }
    std::vector<ExprPtr> args;
    while (!is_op(cur(), "]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    auto e = make(ExprKind::kGetitem, t.pos);
    e->args.push_back(std::move(node));
    if (args.size() == 1) {
      e->args.push_back(std::move(args[0]));
    } else {
      auto tuple = make(ExprKind::kTuple, t.pos);
      tuple->args = std::move(args);
      e->args.push_back(seal(std::move(tuple)));
    }
    return seal(std::move(e));
  }

  ExprPtr parse_subscribed() {
    uint32_t pos = cur().pos;
    std::vector<ExprPtr> args;
    if (is_op(cur(), ":")) {
      next();
      args.push_back(nullptr);
    } else {
      ExprPtr node = parse_expression(true);
      if (!is_op(cur(), ":")) return node;
      next();
      args.push_back(std::move(node));
    }
    auto end_of_item = [&]() { return is_op(cur(), "]") || is_op(cur(), ","); };
    if (is_op(cur(), ":")) {
      args.push_back(nullptr);
    } else if (!end_of_item()) {
      args.push_back(parse_expression(true));
    } else {
      args.push_back(nullptr);
    }
    if (is_op(cur(), ":")) {
      next();
      args.push_back(end_of_item() ? nullptr : parse_expression(true));
    } else {
      args.push_back(nullptr);
    }
    auto e = make(ExprKind::kSlice, pos);
    e->args = std::move(args);
    return seal(std::move(e));
  }

  void parse_call_args(Expr* e) {
    const Token& open = expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) fail_at(open.pos, "invalid syntax for function call expression");
    };
    while (!is_op(cur(), ")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(cur(), ")")) break;
      }
      if (is_op(cur(), "*")) {
        ensure(!e->dyn_args && !e->dyn_kwargs);
        next();
        e->dyn_args = parse_expression(true);
      } else if (is_op(cur(), "**")) {
        ensure(!e->dyn_kwargs);
        next();
        e->dyn_kwargs = parse_expression(true);
      } else if (cur().type == TokenType::kName && is_op(look(), "=")) {
        ensure(!e->dyn_kwargs);
        std::string key = cur().value;
        next();
        next();
        e->kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        ensure(!e->dyn_args && !e->dyn_kwargs && e->kwargs.empty());
        e->args.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::kCall, cur().pos);
    e->args.push_back(std::move(node));
    parse_call_args(e.get());
    return seal(std::move(e));
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op(cur(), "|") || start_inline) {
      if (!start_inline) next();
      const Token& t = expect_name();
      std::string name = t.value;
      while (skip_op(".")) name += "." + expect_name().value;
      auto e = make(ExprKind::kFilter, t.pos);
      e->name = name;
      e->args.push_back(std::move(node));
      if (is_op(cur(), "(")) parse_call_args(e.get());
      e->filter = find_filter(name);
      if (!e->filter)
        unknown_.push_back({t.pos, fmt::format("No filter named {}.", quoted(name)), soft_});
      node = seal(std::move(e));
      start_inline = false;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const Token& is_tok = next();
    bool negated = skip_name("not");
    std::string name = expect_name().value;
    while (skip_op(".")) name += "." + expect_name().value;
    auto e = make(ExprKind::kTest, is_tok.pos);
    e->name = name;
    e->args.push_back(std::move(node));
    const Token& t = cur();
    if (is_op(t, "(")) {
      parse_call_args(e.get());
    } else if ((t.type == TokenType::kName || t.type == TokenType::kString ||
                t.type == TokenType::kInteger || t.type == TokenType::kFloat || is_op(t, "[") ||
                is_op(t, "{")) &&
               !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and")) {
      if (is_name(t, "is")) fail("You cannot chain multiple tests with is");
      ExprPtr arg = parse_primary(false);
      e->args.push_back(parse_postfix(std::move(arg)));
    }
    e->test = find_test(name);
    if (!e->test)
      unknown_.push_back({is_tok.pos, fmt::format("No test named {}.", quoted(name)), soft_});
    e = seal(std::move(e));
    if (!negated) return e;
    auto n = make(ExprKind::kNot, is_tok.pos);
    n->args.push_back(std::move(e));
    return seal(std::move(n));
  }

  std::string_view src_;
  const std::vector<Token>& toks_;
  size_t i_ = 0;
  int depth_ = 0;
  bool soft_ = false;
  int loop_depth_ = 0;
  std::vector<std::string> tag_stack_;
  std::vector<EndTokens> end_stack_;
  std::vector<MacroDef*> open_macros_;
  struct Unknown {
    uint32_t pos;
    std::string message;
    bool soft;
  };
  std::vector<Unknown> unknown_;
};

}  // namespace

Body parse_template(std::string_view source, const std::vector<Token>& tokens) {
  return Parser(source, tokens).parse();
}

}  // namespace folio::jinja
