// Template syntax tree: expressions (Expr) and statements (Stmt), the shape
// of jinja2's nodes.py reduced to what the engine evaluates. Every node keeps
// the byte offset of its source token for error positions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace folio::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind : uint8_t {
  kConst,     // value
  kName,      // name
  kNSRef,     // name.name2 as an assignment target
  kGetattr,   // args[0].name
  kGetitem,   // args[0][args[1]]
  kSlice,     // args[0..2]: start, stop, step (each may be null); only inside kGetitem
  kCall,      // args[0](args[1..], kwargs, *dyn_args, **dyn_kwargs)
  kFilter,    // args[0] | name(args[1..], kwargs); args[0] null in filter / set blocks
  kTest,      // args[0] is name(args[1..], kwargs)
  kNeg,       // -args[0]
  kPos,       // +args[0]
  kNot,       // not args[0]
  kBinary,    // args[0] op args[1]
  kAnd,       // args[0] and args[1]
  kOr,        // args[0] or args[1]
  kConcat,    // args[0] ~ args[1] ~ ...
  kCompare,   // args[0] cmp[0] args[1] cmp[1] args[2] ...
  kCondExpr,  // args[1] if args[0] else args[2] (args[2] may be null)
  kList,      // [args...]
  kTuple,     // (args...)
  kDict,      // {args[0]: args[1], args[2]: args[3], ...}
};

enum class BinOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CmpOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

class Interpreter;
using FilterFn = Value (*)(Interpreter& in, const Value& operand, CallArgs& args);
using TestFn = bool (*)(Interpreter& in, const Value& operand, CallArgs& args);

struct Expr {
  ExprKind kind = ExprKind::kConst;
  uint16_t depth = 1;  // height of this subtree (bounded by the parser)
  uint32_t pos = 0;
  Value value;        // kConst
  std::string name;   // kName, kNSRef namespace, kGetattr attribute, filter / test name
  std::string name2;  // kNSRef attribute
  BinOp op = BinOp::kAdd;
  std::vector<CmpOp> cmp;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args, dyn_kwargs;
  // kFilter / kTest: resolved at parse time; null when the name is unknown
  // inside an if (jinja2 then fails only when the filter runs).
  FilterFn filter = nullptr;
  TestFn test = nullptr;
};

enum class StmtKind : uint8_t {
  kOutput,       // text and {{ expressions }}
  kIf,           // branches (test, body)..., else_body
  kFor,          // for target in iter [if test] [recursive]: body [else else_body]
  kSet,          // set target = expr
  kSetBlock,     // set target [| filter]: body endset
  kMacro,        // macro
  kCallBlock,    // call [(params)] expr: body endcall
  kFilterBlock,  // filter expr: body endfilter
  kWith,         // with targets = values: body endwith
  kScope,        // a body run in its own scope ({% generation %})
  kBreak,
  kContinue,
};

struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() params
  Body body;
  bool catch_varargs = false;  // the body reads `varargs`
  bool catch_kwargs = false;   // the body reads `kwargs`
  bool caller = false;         // the body reads `caller`
};

struct OutputItem {
  std::string text;  // template data when expr is null
  ExprPtr expr;
};

struct Stmt {
  StmtKind kind = StmtKind::kOutput;
  uint32_t pos = 0;
  std::vector<OutputItem> output;                  // kOutput
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf
  ExprPtr target;                                  // kFor, kSet, kSetBlock
  ExprPtr expr;  // kFor iterable, kSet value, kSetBlock / kFilterBlock filter, kCallBlock call
  ExprPtr test;  // kFor filter
  bool recursive = false;  // kFor
  Body body, else_body;
  std::vector<ExprPtr> targets, values;  // kWith
  std::shared_ptr<MacroDef> macro;       // kMacro, kCallBlock (caller signature)
};

}  // namespace folio::jinja
