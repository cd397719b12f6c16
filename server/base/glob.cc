#include "server/base/glob.h"

#include <cctype>

namespace bloomgate {
namespace {

char Fold(char c, bool nocase) {
  return nocase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
}

// Matches a character class starting just after '['; advances *p past ']'.
bool MatchClass(std::string_view pattern, size_t* p, char c, bool nocase) {
  size_t i = *p;
  bool negate = false;
  if (i < pattern.size() && pattern[i] == '^') {
    negate = true;
    ++i;
  }
  bool matched = false;
  while (i < pattern.size() && pattern[i] != ']') {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      if (Fold(pattern[i + 1], nocase) == Fold(c, nocase)) matched = true;
      i += 2;
    } else if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      char lo = Fold(pattern[i], nocase), hi = Fold(pattern[i + 2], nocase);
      if (lo > hi) std::swap(lo, hi);
      char folded = Fold(c, nocase);
      if (folded >= lo && folded <= hi) matched = true;
      i += 3;
    } else {
      if (Fold(pattern[i], nocase) == Fold(c, nocase)) matched = true;
      ++i;
    }
  }
  *p = i < pattern.size() ? i + 1 : i;  // past ']' (a missing ']' ends the class)
  return negate ? !matched : matched;
}

}  // namespace

// Iterative matcher with single-star backtracking: O(|pattern|·|text|) in the
// worst case, never exponential, so a hostile pattern cannot stall a worker.
bool GlobMatch(std::string_view pattern, std::string_view text, bool nocase) {
  size_t p = 0, t = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        while (p < pattern.size() && pattern[p] == '*') ++p;
        if (p == pattern.size()) return true;
        star_p = p;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p;
        ++t;
        continue;
      }
      if (pc == '[') {
        size_t next = p + 1;
        if (MatchClass(pattern, &next, text[t], nocase)) {
          p = next;
          ++t;
          continue;
        }
      } else {
        size_t lit = p;
        if (pc == '\\' && p + 1 < pattern.size()) lit = p + 1;
        if (Fold(pattern[lit], nocase) == Fold(text[t], nocase)) {
          p = lit + 1;
          ++t;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace bloomgate
