#include "server/base/glob.h"

#include <gtest/gtest.h>

#include <string>

namespace bloomgate {
namespace {

TEST(Glob, LiteralPatternMatchesOnlyItself) {
  EXPECT_TRUE(GlobMatch("user:1", "user:1"));
  EXPECT_FALSE(GlobMatch("user:1", "user:10"));
  EXPECT_FALSE(GlobMatch("user:10", "user:1"));
  EXPECT_FALSE(GlobMatch("User:1", "user:1"));
  EXPECT_TRUE(GlobMatch("", ""));
  EXPECT_FALSE(GlobMatch("", "a"));
  EXPECT_FALSE(GlobMatch("a", ""));
}

TEST(Glob, StarMatchesAnyRunIncludingNone) {
  EXPECT_TRUE(GlobMatch("*", "anything"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("user:*", "user:"));
  EXPECT_TRUE(GlobMatch("user:*", "user:42"));
  EXPECT_FALSE(GlobMatch("user:*", "use"));
  EXPECT_TRUE(GlobMatch("*:42", "user:42"));
  EXPECT_TRUE(GlobMatch("h*llo", "hllo"));
  EXPECT_TRUE(GlobMatch("h*llo", "heeeello"));
  EXPECT_FALSE(GlobMatch("h*llo", "hello!"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "aXbYbZ"));
  EXPECT_TRUE(GlobMatch("***", "x"));
  EXPECT_TRUE(GlobMatch("a**b", "ab"));
}

TEST(Glob, StarBacktracksToALaterOccurrence) {
  EXPECT_TRUE(GlobMatch("*ab", "aab"));
  EXPECT_TRUE(GlobMatch("*abc", "ababc"));
  EXPECT_TRUE(GlobMatch("a*bc*d", "abcbcXbcd"));
  EXPECT_FALSE(GlobMatch("*abc", "ababd"));
}

TEST(Glob, QuestionMarkMatchesExactlyOneCharacter) {
  EXPECT_TRUE(GlobMatch("h?llo", "hello"));
  EXPECT_TRUE(GlobMatch("h?llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h?llo", "hllo"));
  EXPECT_FALSE(GlobMatch("h?llo", "heello"));
  EXPECT_TRUE(GlobMatch("???", "abc"));
  EXPECT_FALSE(GlobMatch("???", "ab"));
  EXPECT_FALSE(GlobMatch("?", ""));
}

TEST(Glob, ClassMatchesOneOfItsCharacters) {
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hello"));
  EXPECT_TRUE(GlobMatch("h[ae]llo", "hallo"));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "hillo"));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "hllo"));
  EXPECT_FALSE(GlobMatch("h[ae]llo", "haello"));
}

TEST(Glob, CaretNegatesAClass) {
  EXPECT_TRUE(GlobMatch("h[^e]llo", "hallo"));
  EXPECT_TRUE(GlobMatch("h[^e]llo", "hbllo"));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hello"));
  EXPECT_FALSE(GlobMatch("h[^e]llo", "hllo"));
  EXPECT_FALSE(GlobMatch("[^abc]", "b"));
  EXPECT_TRUE(GlobMatch("[^abc]", "d"));
}

TEST(Glob, RangeMatchesInclusiveBounds) {
  EXPECT_TRUE(GlobMatch("h[a-b]llo", "hallo"));
  EXPECT_TRUE(GlobMatch("h[a-b]llo", "hbllo"));
  EXPECT_FALSE(GlobMatch("h[a-b]llo", "hcllo"));
  EXPECT_TRUE(GlobMatch("key[0-9]", "key7"));
  EXPECT_FALSE(GlobMatch("key[0-9]", "keyx"));
  EXPECT_TRUE(GlobMatch("[a-cx-z]", "y"));
  EXPECT_FALSE(GlobMatch("[a-cx-z]", "m"));
  EXPECT_FALSE(GlobMatch("[^a-c]", "b"));
  EXPECT_TRUE(GlobMatch("[^a-c]", "d"));
}

TEST(Glob, ReversedRangeIsSwappedAsRedisDoes) {
  EXPECT_TRUE(GlobMatch("[c-a]", "b"));
  EXPECT_TRUE(GlobMatch("[9-0]", "5"));
  EXPECT_FALSE(GlobMatch("[c-a]", "d"));
}

TEST(Glob, BackslashEscapesTheNextCharacter) {
  EXPECT_TRUE(GlobMatch("a\\*b", "a*b"));
  EXPECT_FALSE(GlobMatch("a\\*b", "aXb"));
  EXPECT_TRUE(GlobMatch("a\\?b", "a?b"));
  EXPECT_FALSE(GlobMatch("a\\?b", "aXb"));
  EXPECT_TRUE(GlobMatch("\\[x]", "[x]"));
  EXPECT_FALSE(GlobMatch("\\[x]", "x"));
  EXPECT_TRUE(GlobMatch("a\\\\b", "a\\b"));
  EXPECT_TRUE(GlobMatch("\\a", "a"));
}

TEST(Glob, TrailingBackslashMatchesABackslash) {
  EXPECT_TRUE(GlobMatch("a\\", "a\\"));
  EXPECT_FALSE(GlobMatch("a\\", "a"));
}

TEST(Glob, BackslashEscapesInsideAClass) {
  EXPECT_TRUE(GlobMatch("[\\]]", "]"));
  EXPECT_TRUE(GlobMatch("[\\^a]", "^"));
  EXPECT_TRUE(GlobMatch("[a\\-z]", "-"));
  EXPECT_FALSE(GlobMatch("[a\\-z]", "m"));
}

TEST(Glob, UnterminatedClassEndsAtThePatternsEnd) {
  EXPECT_TRUE(GlobMatch("[abc", "b"));
  EXPECT_FALSE(GlobMatch("[abc", "d"));
}

TEST(Glob, EmptyClassMatchesNothingAndNegatedEmptyClassMatchesAnything) {
  EXPECT_FALSE(GlobMatch("[]", "a"));
  EXPECT_TRUE(GlobMatch("[^]", "a"));
}

TEST(Glob, NocaseFoldsLiteralsClassesAndRanges) {
  EXPECT_TRUE(GlobMatch("HELLO", "hello", /*nocase=*/true));
  EXPECT_FALSE(GlobMatch("HELLO", "hello", /*nocase=*/false));
  EXPECT_TRUE(GlobMatch("maxmemory*", "MAXMEMORY-policy", /*nocase=*/true));
  EXPECT_TRUE(GlobMatch("h[AE]llo", "hello", /*nocase=*/true));
  EXPECT_FALSE(GlobMatch("h[AE]llo", "hello", /*nocase=*/false));
  EXPECT_TRUE(GlobMatch("[A-C]", "b", /*nocase=*/true));
  EXPECT_FALSE(GlobMatch("[A-C]", "b", /*nocase=*/false));
  EXPECT_FALSE(GlobMatch("[^A-C]", "b", /*nocase=*/true));
}

TEST(Glob, MatchesBinaryTextByteForByte) {
  const std::string text("a\0b", 3);
  EXPECT_TRUE(GlobMatch("a?b", text));
  EXPECT_TRUE(GlobMatch(std::string("a\0*", 3), text));
  EXPECT_TRUE(GlobMatch("*", "\xff\xfe"));
  EXPECT_TRUE(GlobMatch("[\xf0-\xff]", "\xfe"));
}

TEST(Glob, PathologicalStarsAgainstALongRunFinishAndFail) {
  // A naive recursive matcher explores C(n, 7) splits here; the answer must
  // still come back (and be false: there is no 'b').
  const std::string text(20000, 'a');
  EXPECT_FALSE(GlobMatch("a*a*a*a*a*a*a*b", text));
  EXPECT_FALSE(GlobMatch("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", text));
  EXPECT_FALSE(GlobMatch("*?*?*?*?*?*?*?*?*?*?*?*[b]", text));
  EXPECT_TRUE(GlobMatch("a*a*a*a*a*a*a*a", text));
}

}  // namespace
}  // namespace bloomgate
