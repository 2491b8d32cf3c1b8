#include "grammar/grammar.h"

#include <algorithm>

#include <fmt/format.h>

namespace folio::grammar {

std::string SourceLocation::to_string() const {
  if (line <= 0) return "(no location)";
  return fmt::format("line {}:{}", line, column);
}

int Grammar::find_rule(std::string_view name) const {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Grammar::to_gbnf() const {
  std::string out;
  auto emit = [&](const GrammarRule& rule) {
    out += rule.name;
    out += " ::=";
    for (size_t a = 0; a < rule.alternatives.size(); ++a) {
      if (a > 0) out += " |";
      // An empty alternative is written "": a '|' at the end of a line
      // would continue the rule on the next line.
      if (rule.alternatives[a].empty()) out += " \"\"";
      for (const GrammarSymbol& s : rule.alternatives[a]) {
        out += ' ';
        out += s.is_rule() ? rules[s.index].name : char_sets[s.index].to_gbnf();
      }
    }
    out += '\n';
  };
  // The start rule is named root in GBNF: write it first under that name.
  if (root < rules.size()) {
    GrammarRule r = rules[root];
    r.name = "root";
    emit(r);
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    if (i != root) emit(rules[i]);
  }
  return out;
}

std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  // Fixed point: a rule is nullable when one alternative has only nullable
  // rule references (terminals always read a character).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const GrammarSequence& alt : g.rules[r].alternatives) {
        const bool all = std::all_of(alt.begin(), alt.end(), [&](const GrammarSymbol& s) {
          return s.is_rule() && nullable[s.index];
        });
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

namespace {

std::string describe_rule(const GrammarRule& r) {
  switch (r.origin) {
    case RuleOrigin::kNamed:
      return "'" + r.name + "'";
    case RuleOrigin::kGroup:
      return "(group at " + r.where.to_string() + ")";
    case RuleOrigin::kRepetition:
      return "(repetition at " + r.where.to_string() + ")";
    case RuleOrigin::kSequence:
      return "(sequence at " + r.where.to_string() + ")";
  }
  return r.name;
}

}  // namespace

Status validate_grammar(const Grammar& g) {
  const size_t n = g.rules.size();
  if (g.root >= n) return invalid_argument("grammar: no start rule");
  for (const GrammarRule& r : g.rules) {
    if (r.alternatives.empty())
      return invalid_argument("grammar: rule '{}' has no alternatives", r.name);
    for (const GrammarSequence& alt : r.alternatives) {
      for (const GrammarSymbol& s : alt) {
        const size_t limit = s.is_rule() ? n : g.char_sets.size();
        if (s.index >= limit) {
          return invalid_argument("grammar: rule '{}' refers to {} {} out of range", r.name,
                                  s.is_rule() ? "rule" : "character set", s.index);
        }
      }
    }
  }

  // Left-corner graph: A -> B when an alternative of A is (nullable...) B ...
  const std::vector<bool> nullable = nullable_rules(g);
  std::vector<std::vector<uint32_t>> edges(n);
  for (size_t r = 0; r < n; ++r) {
    for (const GrammarSequence& alt : g.rules[r].alternatives) {
      for (const GrammarSymbol& s : alt) {
        if (!s.is_rule()) break;
        edges[r].push_back(s.index);
        if (!nullable[s.index]) break;
      }
    }
  }

  // Iterative DFS (generated grammars can chain thousands of rules) looking
  // for a back edge; the DFS path then holds the cycle.
  enum : uint8_t { kWhite, kGrey, kBlack };
  std::vector<uint8_t> color(n, kWhite);
  struct Frame {
    uint32_t rule;
    size_t next_edge;
  };
  std::vector<Frame> path;
  for (uint32_t start = 0; start < n; ++start) {
    if (color[start] != kWhite) continue;
    path.push_back({start, 0});
    color[start] = kGrey;
    while (!path.empty()) {
      Frame& f = path.back();
      if (f.next_edge == edges[f.rule].size()) {
        color[f.rule] = kBlack;
        path.pop_back();
        continue;
      }
      const uint32_t to = edges[f.rule][f.next_edge++];
      if (color[to] == kWhite) {
        color[to] = kGrey;
        path.push_back({to, 0});
        continue;
      }
      if (color[to] != kGrey) continue;
      // Cycle: path from `to` to the top, back to `to`.
      size_t first = 0;
      while (path[first].rule != to) ++first;
      std::vector<uint32_t> cycle;
      for (size_t i = first; i < path.size(); ++i) cycle.push_back(path[i].rule);
      const GrammarRule& head = g.rules[to];
      if (cycle.size() == 1 && head.origin == RuleOrigin::kRepetition) {
        return invalid_argument(
            "grammar: {}: repetition of an item that can match the empty string: it could "
            "repeat forever without reading input",
            head.where.to_string());
      }
      // Report at the first rule the user wrote, if any.
      const GrammarRule* named = nullptr;
      for (uint32_t r : cycle) {
        if (g.rules[r].origin == RuleOrigin::kNamed) {
          named = &g.rules[r];
          break;
        }
      }
      std::string chain;
      for (uint32_t r : cycle) chain += describe_rule(g.rules[r]) + " -> ";
      chain += describe_rule(head);
      const GrammarRule& at = named != nullptr ? *named : head;
      return invalid_argument(
          "grammar: {}: left recursion: {} can reach itself without reading input ({}); a "
          "pushdown matcher cannot run it: write it with repetition, e.g. list ::= item (\",\" "
          "item)*",
          at.where.to_string(), describe_rule(at), chain);
    }
  }
  return Status();
}

}  // namespace folio::grammar
