#include "server/resp/resp_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {
namespace {

using namespace std::string_literals;
using Command = std::vector<std::string>;

// Redis's limits before AUTH (networking.c): 10 arguments, 16 KB per bulk.
constexpr RespLimits kUnauthenticatedLimits{.max_bulk_len = 16 * 1024,
                                            .max_multibulk_len = 10,
                                            .max_inline_len = 64 * 1024,
                                            .unauthenticated = true};

std::string Multibulk(const Command& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& arg : args) {
    out += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  }
  return out;
}

Command ToCommand(const std::vector<std::string_view>& args) {
  return Command(args.begin(), args.end());
}

// Plays the connection's part: appends each read to a buffer, takes every
// complete command out of it and drops the bytes each one consumed.
class Connection {
 public:
  explicit Connection(const RespLimits& limits = {}) : parser_(limits) {}

  ParseStatus Feed(std::string_view bytes) {
    buffer_.append(bytes);
    for (;;) {
      std::vector<std::string_view> args;
      size_t consumed = 12345;
      const ParseStatus status = parser_.Parse(buffer_, &args, &consumed);
      if (status != ParseStatus::kCommand) {
        EXPECT_EQ(consumed, 0u) << "status " << status;
        EXPECT_TRUE(args.empty());
        return status;
      }
      EXPECT_GT(consumed, 0u);
      EXPECT_LE(consumed, buffer_.size());
      EXPECT_FALSE(args.empty());
      commands_.push_back(ToCommand(args));
      buffer_.erase(0, consumed);
    }
  }

  // Feeds `bytes` in pieces of `piece` bytes; returns the last status.
  ParseStatus FeedInPieces(std::string_view bytes, size_t piece) {
    ParseStatus status = ParseStatus::kNeedMore;
    for (size_t at = 0; at < bytes.size(); at += piece) {
      status = Feed(bytes.substr(at, piece));
      if (status == ParseStatus::kError) break;
    }
    return status;
  }

  RespParser& parser() { return parser_; }
  const std::vector<Command>& commands() const { return commands_; }
  const std::string& buffer() const { return buffer_; }

 private:
  RespParser parser_;
  std::string buffer_;
  std::vector<Command> commands_;
};

// Parses `input` whole, then again one byte at a time, expects both to fail
// with the same text (the verdict must not depend on how reads split the
// stream) and returns that text.
std::string ErrorFor(std::string_view input, const RespLimits& limits = {}) {
  Connection whole(limits);
  EXPECT_EQ(whole.Feed(input), ParseStatus::kError) << input;
  Connection bytewise(limits);
  EXPECT_EQ(bytewise.FeedInPieces(input, 1), ParseStatus::kError) << input;
  EXPECT_EQ(whole.parser().error(), bytewise.parser().error()) << input;
  return whole.parser().error();
}

// Parses `input` whole and expects exactly `expected`, nothing left over.
void ExpectCommands(std::string_view input, const std::vector<Command>& expected,
                    const RespLimits& limits = {}) {
  Connection connection(limits);
  EXPECT_EQ(connection.Feed(input), ParseStatus::kNeedMore) << input;
  EXPECT_EQ(connection.commands(), expected) << input;
  EXPECT_TRUE(connection.buffer().empty()) << input;
}

// Several kinds of command back to back: binary bulks, an empty bulk, empty
// arrays, inline lines with and without quotes, a blank line.
const std::string kMixedStream =
    Multibulk({"SET", "key", "va\r\nl\0ue"s}) + "*0\r\n" + "PING\r\n" +
    "*-1\r\n" + Multibulk({"ECHO", ""}) + "SET k \"a b\\n\"\n" + "\r\n" +
    Multibulk({"BF.ADD", "filter", "item"});
const std::vector<Command> kMixedCommands = {
    {"SET", "key", "va\r\nl\0ue"s},
    {"PING"},
    {"ECHO", ""},
    {"SET", "k", "a b\n"},
    {"BF.ADD", "filter", "item"},
};

TEST(RespParser, ParsesOneWholeCommand) {
  RespParser parser;
  const std::string input = Multibulk({"BF.ADD", "bf", "hello"});
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(input, &args, &consumed), ParseStatus::kCommand);
  EXPECT_EQ(consumed, input.size());
  EXPECT_EQ(ToCommand(args), (Command{"BF.ADD", "bf", "hello"}));
}

TEST(RespParser, MultibulkArgumentsAreViewsIntoTheInput) {
  RespParser parser;
  const std::string input = Multibulk({"GET", "key"});
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(input, &args, &consumed), ParseStatus::kCommand);
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[1].data(), input.data() + input.find("key"));
}

TEST(RespParser, ConsumesOnlyTheFirstOfSeveralPipelinedCommands) {
  RespParser parser;
  const std::string first = Multibulk({"PING"});
  const std::string input = first + Multibulk({"ECHO", "x"}) + "PING\r\n";
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(input, &args, &consumed), ParseStatus::kCommand);
  EXPECT_EQ(consumed, first.size());
  EXPECT_EQ(ToCommand(args), (Command{"PING"}));
}

TEST(RespParser, ParsesPipelinedCommandsInOneBuffer) {
  ExpectCommands(kMixedStream, kMixedCommands);
}

TEST(RespParser, ParsesCommandsFedOneByteAtATime) {
  Connection connection;
  EXPECT_EQ(connection.FeedInPieces(kMixedStream, 1), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.commands(), kMixedCommands);
  EXPECT_TRUE(connection.buffer().empty());
}

TEST(RespParser, EverySplitOffsetYieldsTheSameCommands) {
  for (size_t split = 0; split <= kMixedStream.size(); ++split) {
    Connection connection;
    const ParseStatus first = connection.Feed(kMixedStream.substr(0, split));
    EXPECT_EQ(first, ParseStatus::kNeedMore) << "split at " << split;
    EXPECT_EQ(connection.Feed(kMixedStream.substr(split)),
              ParseStatus::kNeedMore);
    EXPECT_EQ(connection.commands(), kMixedCommands) << "split at " << split;
    EXPECT_TRUE(connection.buffer().empty()) << "split at " << split;
  }
}

TEST(RespParser, EveryPairOfSplitOffsetsYieldsTheSameCommands) {
  const std::string_view stream = kMixedStream;
  for (size_t a = 0; a <= stream.size(); ++a) {
    for (size_t b = a; b <= stream.size(); ++b) {
      Connection connection;
      connection.Feed(stream.substr(0, a));
      connection.Feed(stream.substr(a, b - a));
      EXPECT_EQ(connection.Feed(stream.substr(b)), ParseStatus::kNeedMore);
      ASSERT_EQ(connection.commands(), kMixedCommands)
          << "splits at " << a << " and " << b;
    }
  }
}

TEST(RespParser, BulkSplitAcrossThreeReads) {
  Connection connection;
  EXPECT_EQ(connection.Feed("*2\r\n$4\r\nECHO\r\n$11\r\nhel"),
            ParseStatus::kNeedMore);
  EXPECT_EQ(connection.Feed("lo wor"), ParseStatus::kNeedMore);
  EXPECT_TRUE(connection.commands().empty());
  EXPECT_EQ(connection.Feed("ld\r\n"), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.commands(),
            (std::vector<Command>{{"ECHO", "hello world"}}));
}

TEST(RespParser, WaitsForTheLfAfterAHeaderCr) {
  Connection connection;
  EXPECT_EQ(connection.Feed("*1\r"), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.Feed("\n$4\r"), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.Feed("\nPING\r"), ParseStatus::kNeedMore);
  EXPECT_TRUE(connection.commands().empty());
  EXPECT_EQ(connection.Feed("\n"), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.commands(), (std::vector<Command>{{"PING"}}));
}

TEST(RespParser, BulksAreBinarySafe) {
  const std::string binary = "\r\n\0\r\0\n$*\xff"s;
  ExpectCommands(Multibulk({"SET", "k", binary}), {{"SET", "k", binary}});
}

TEST(RespParser, EmptyBulkIsAnEmptyArgument) {
  ExpectCommands("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", {{"ECHO", ""}});
}

TEST(RespParser, ZeroLengthArrayIsSkipped) {
  RespParser parser;
  const std::string input = "*0\r\n" + Multibulk({"PING"});
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(input, &args, &consumed), ParseStatus::kCommand);
  EXPECT_EQ(consumed, input.size()) << "the skipped *0 is consumed too";
  EXPECT_EQ(ToCommand(args), (Command{"PING"}));
}

TEST(RespParser, NegativeArrayLengthIsSkipped) {
  ExpectCommands("*-10\r\n*-1\r\n" + Multibulk({"PING"}), {{"PING"}});
  // string2ll accepts all of int64, so INT64_MIN is just another empty array.
  ExpectCommands("*-9223372036854775808\r\n" + Multibulk({"PING"}), {{"PING"}});
}

TEST(RespParser, EmptyCommandsAloneNeedMoreAndStayUnconsumed) {
  Connection connection;
  EXPECT_EQ(connection.Feed("*0\r\n*-10\r\n\r\n   \n"), ParseStatus::kNeedMore);
  EXPECT_TRUE(connection.commands().empty());
  EXPECT_EQ(connection.buffer().size(), 16u);
  EXPECT_EQ(connection.Feed("PING\r\n"), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.commands(), (std::vector<Command>{{"PING"}}));
  EXPECT_TRUE(connection.buffer().empty());
}

TEST(RespParser, NeedMoreClearsArgsAndConsumesNothing) {
  RespParser parser;
  std::vector<std::string_view> args = {"stale"};
  size_t consumed = 99;
  EXPECT_EQ(parser.Parse("*2\r\n$3\r\nGET\r\n", &args, &consumed),
            ParseStatus::kNeedMore);
  EXPECT_TRUE(args.empty());
  EXPECT_EQ(consumed, 0u);
  RespParser fresh;
  EXPECT_EQ(fresh.Parse("", &args, &consumed), ParseStatus::kNeedMore);
}

// The cases of Redis's tests/unit/protocol.tcl, with their inputs verbatim.
TEST(RespParser, RedisProtocolSuiteErrorsMatchVerbatim) {
  EXPECT_EQ(ErrorFor("*20000000\r\n"),
            "ERR Protocol error: invalid multibulk length");
  EXPECT_EQ(ErrorFor("*3000000000\r\n"),
            "ERR Protocol error: invalid multibulk length");
  EXPECT_EQ(ErrorFor("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n"),
            "ERR Protocol error: expected '$', got 'f'");
  EXPECT_EQ(ErrorFor("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n"),
            "ERR Protocol error: invalid bulk length");
  EXPECT_EQ(ErrorFor("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n"),
            "ERR Protocol error: invalid bulk length");
  EXPECT_EQ(ErrorFor("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n"),
            "ERR Protocol error: invalid bulk length");
  EXPECT_EQ(ErrorFor("*1\r\nfoo\r\n"),
            "ERR Protocol error: expected '$', got 'f'");
  EXPECT_EQ(ErrorFor("set \"\"\"test-key\"\"\" test-value\r\nping\r\n"),
            "ERR Protocol error: unbalanced quotes in request");
}

TEST(RespParser, ArrayLengthLimitIsInclusive) {
  Connection at_limit;
  EXPECT_EQ(at_limit.Feed("*1048576\r\n"), ParseStatus::kNeedMore);
  EXPECT_EQ(ErrorFor("*1048577\r\n"),
            "ERR Protocol error: invalid multibulk length");
}

TEST(RespParser, MalformedArrayLengthsAreInvalid) {
  // Redis's string2ll: no sign but '-', no leading zeros, no spaces, no "-0".
  for (const char* input :
       {"*\r\n", "*abc\r\n", "*01\r\n", "*+1\r\n", "* 1\r\n", "*1 \r\n",
        "*-0\r\n", "*1x\r\n", "*9223372036854775808\r\n",
        "*-9223372036854775809\r\n", "*99999999999999999999999\r\n"}) {
    EXPECT_EQ(ErrorFor(input), "ERR Protocol error: invalid multibulk length")
        << input;
  }
}

TEST(RespParser, MalformedBulkLengthsAreInvalid) {
  for (const char* input : {"$\r\n", "$-1\r\n", "$01\r\n", "$+1\r\n", "$1 \r\n",
                            "$-0\r\n", "$18446744073709551616\r\n"}) {
    EXPECT_EQ(ErrorFor("*1\r\n"s + input),
              "ERR Protocol error: invalid bulk length")
        << input;
  }
}

TEST(RespParser, BulkLengthLimitIsInclusive) {
  Connection at_limit;
  EXPECT_EQ(at_limit.Feed("*1\r\n$536870912\r\n"), ParseStatus::kNeedMore);
  EXPECT_EQ(ErrorFor("*1\r\n$536870913\r\n"),
            "ERR Protocol error: invalid bulk length");
}

TEST(RespParser, CrWithoutLfInAHeaderIsAnInvalidLength) {
  EXPECT_EQ(ErrorFor("*1\rx"), "ERR Protocol error: invalid multibulk length");
  EXPECT_EQ(ErrorFor("*1\r\n$4\rxPING\r\n"),
            "ERR Protocol error: invalid bulk length");
}

TEST(RespParser, ExpectedDollarNamesTheOffendingByte) {
  // Refused on the first byte, without waiting for a CR.
  EXPECT_EQ(ErrorFor("*1\r\nx"), "ERR Protocol error: expected '$', got 'x'");
  EXPECT_EQ(ErrorFor("*2\r\n$4\r\nECHO\r\n*1\r\n"),
            "ERR Protocol error: expected '$', got '*'");
  // CR and LF would break the reply line, so they show as a space.
  EXPECT_EQ(ErrorFor("*1\r\n\r\n"), "ERR Protocol error: expected '$', got ' '");
  EXPECT_EQ(ErrorFor("*1\r\n\n"), "ERR Protocol error: expected '$', got ' '");
}

TEST(RespParser, MissingCrlfAfterBulkDataIsAProtocolError) {
  EXPECT_EQ(ErrorFor("*1\r\n$3\r\nfooXY"),
            "ERR Protocol error: expected CRLF after bulk data");
  EXPECT_EQ(ErrorFor("*1\r\n$3\r\nfoo\rX"),
            "ERR Protocol error: expected CRLF after bulk data");
  EXPECT_EQ(ErrorFor("*1\r\n$2\r\nfoo\r\n"),
            "ERR Protocol error: expected CRLF after bulk data");
}

TEST(RespParser, ArrayCountLineOver64KbIsTooBig) {
  // Like Redis: "*" plus 65535 digits (a 64 KB line) still waits for its CR.
  const std::string line = "*" + std::string(64 * 1024 - 1, '1');
  Connection connection;
  EXPECT_EQ(connection.Feed(line), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.Feed("1"), ParseStatus::kError);
  EXPECT_EQ(connection.parser().error(),
            "ERR Protocol error: too big mbulk count string");
  // The same 64 KB line once its CR arrives is judged on its value.
  EXPECT_EQ(ErrorFor(line + "\r\n"),
            "ERR Protocol error: invalid multibulk length");
  // Over the limit is refused even if the CR is in the same read.
  EXPECT_EQ(ErrorFor(line + "1\r\n"),
            "ERR Protocol error: too big mbulk count string");
}

TEST(RespParser, BulkCountLineOver64KbIsTooBig) {
  const std::string line = "*2\r\n$4\r\nECHO\r\n$" + std::string(64 * 1024 - 1, '1');
  Connection connection;
  EXPECT_EQ(connection.Feed(line), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.Feed("1"), ParseStatus::kError);
  EXPECT_EQ(connection.parser().error(),
            "ERR Protocol error: too big bulk count string");
}

TEST(RespParser, UnauthenticatedClientMayNotClaimMoreThanTenArguments) {
  const Command ten(10, "a");
  ExpectCommands(Multibulk(ten), {ten}, kUnauthenticatedLimits);
  EXPECT_EQ(ErrorFor("*11\r\n", kUnauthenticatedLimits),
            "ERR Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(ErrorFor("*20000000\r\n", kUnauthenticatedLimits),
            "ERR Protocol error: unauthenticated multibulk length");
  // Malformed stays malformed, authenticated or not.
  EXPECT_EQ(ErrorFor("*x\r\n", kUnauthenticatedLimits),
            "ERR Protocol error: invalid multibulk length");
}

TEST(RespParser, UnauthenticatedClientMayNotSendBulksOver16Kb) {
  const std::string at_limit(16 * 1024, 'v');
  ExpectCommands(Multibulk({"AUTH", at_limit}), {{"AUTH", at_limit}},
                 kUnauthenticatedLimits);
  EXPECT_EQ(ErrorFor("*2\r\n$4\r\nAUTH\r\n$16385\r\n", kUnauthenticatedLimits),
            "ERR Protocol error: unauthenticated bulk length");
  EXPECT_EQ(ErrorFor("*1\r\n$-1\r\n", kUnauthenticatedLimits),
            "ERR Protocol error: invalid bulk length");
}

TEST(RespParser, UnauthenticatedInlineCommandMayNotHaveMoreThanTenArguments) {
  ExpectCommands("a b c d e f g h i j\r\n",
                 {{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}},
                 kUnauthenticatedLimits);
  EXPECT_EQ(ErrorFor("a b c d e f g h i j k\r\n", kUnauthenticatedLimits),
            "ERR Protocol error: unauthenticated multibulk length");
}

TEST(RespParser, NewLimitsApplyFromTheNextCommand) {
  Connection connection;
  EXPECT_EQ(connection.Feed("*2\r\n$4\r\nAUTH\r\n"), ParseStatus::kNeedMore);
  // Tightened mid-command: the command in flight keeps its limits, even for
  // a bulk header that arrives afterwards...
  connection.parser().set_limits({.max_bulk_len = 2,
                                  .max_multibulk_len = 10,
                                  .max_inline_len = 64 * 1024,
                                  .unauthenticated = true});
  EXPECT_EQ(connection.Feed("$3\r\npwd\r\n"), ParseStatus::kNeedMore);
  EXPECT_EQ(connection.commands(), (std::vector<Command>{{"AUTH", "pwd"}}));
  // ...and the next one gets the new ones.
  EXPECT_EQ(connection.Feed(Multibulk({"GET"})), ParseStatus::kError);
  EXPECT_EQ(connection.parser().error(),
            "ERR Protocol error: unauthenticated bulk length");
}

TEST(RespParser, LoosenedLimitsApplyAfterAuth) {
  Connection connection(kUnauthenticatedLimits);
  EXPECT_EQ(connection.Feed(Multibulk({"AUTH", "pw"})), ParseStatus::kNeedMore);
  connection.parser().set_limits(RespLimits{});
  const Command big(11, std::string(20000, 'x'));
  EXPECT_EQ(connection.Feed(Multibulk(big)), ParseStatus::kNeedMore);
  ASSERT_EQ(connection.commands().size(), 2u);
  EXPECT_EQ(connection.commands()[1], big);
}

TEST(RespParser, ErrorIsStickyUntilReset) {
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  EXPECT_EQ(parser.Parse("*x\r\n", &args, &consumed), ParseStatus::kError);
  const std::string ping = Multibulk({"PING"});
  EXPECT_EQ(parser.Parse(ping, &args, &consumed), ParseStatus::kError);
  EXPECT_EQ(parser.error(), "ERR Protocol error: invalid multibulk length");
  parser.Reset();
  EXPECT_TRUE(parser.error().empty());
  EXPECT_EQ(parser.Parse(ping, &args, &consumed), ParseStatus::kCommand);
  EXPECT_EQ(consumed, ping.size());
}

TEST(RespParser, ResetDropsAPartialCommand) {
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  EXPECT_EQ(parser.Parse("*3\r\n$3\r\nSET\r\n", &args, &consumed),
            ParseStatus::kNeedMore);
  parser.Reset();
  EXPECT_EQ(parser.Parse("PING\r\n", &args, &consumed), ParseStatus::kCommand);
  EXPECT_EQ(ToCommand(args), (Command{"PING"}));
}

TEST(RespParser, InlineCommandSplitsOnWhitespace) {
  ExpectCommands("SET key value\r\n", {{"SET", "key", "value"}});
  ExpectCommands("  SET \t key   value  \r\n", {{"SET", "key", "value"}});
  ExpectCommands("PING\n", {{"PING"}});
}

TEST(RespParser, InlineDoubleQuotesUnescape) {
  ExpectCommands(R"(SET k "a b\n\r\t\b\a\\\"c\x41\x7a\q")" "\r\n",
                 {{"SET", "k", "a b\n\r\t\b\a\\\"cAzq"}});
  // \x needs two hex digits; otherwise the x stands for itself.
  ExpectCommands(R"(ECHO "\xZZ\x4")" "\n", {{"ECHO", "xZZx4"}});
  ExpectCommands("ECHO \"\\x00\"\n", {{"ECHO", "\0"s}});
}

TEST(RespParser, InlineSingleQuotesKeepBackslashesExceptBeforeAQuote) {
  ExpectCommands(R"(SET k 'it\'s a\n')" "\r\n", {{"SET", "k", "it's a\\n"}});
}

TEST(RespParser, InlineEmptyQuotesAreAnEmptyArgument) {
  ExpectCommands("SET k \"\"\r\n", {{"SET", "k", ""}});
  ExpectCommands("ECHO ''\r\n", {{"ECHO", ""}});
}

TEST(RespParser, InlineQuoteMayOpenInsideAToken) {
  ExpectCommands("ECHO a\"b c\"\r\n", {{"ECHO", "ab c"}});
}

TEST(RespParser, InlineVerticalTabSeparatesOnlyBetweenTokens) {
  // sdssplitargs skips isspace() between tokens but ends a bare token only
  // on space, tab, CR or LF.
  ExpectCommands("\vECHO a\vb\r\n", {{"ECHO", "a\vb"}});
  ExpectCommands("ECHO \"a\"\vb\r\n", {{"ECHO", "a", "b"}});
}

TEST(RespParser, InlineNulIsAnOrdinaryByte) {
  ExpectCommands("ECHO a\0b\r\n"s, {{"ECHO", "a\0b"s}});
}

TEST(RespParser, InlineUnbalancedQuotesAreAProtocolError) {
  for (const char* input :
       {"SET k \"abc\r\n", "SET k 'abc\r\n", "SET k \"a\"b\r\n",
        "SET k 'a'b\r\n", "SET k \"abc\\\"\r\n", "ECHO \"a\\\n"}) {
    EXPECT_EQ(ErrorFor(input), "ERR Protocol error: unbalanced quotes in request")
        << input;
  }
}

TEST(RespParser, BlankInlineLinesAreSkipped) {
  RespParser parser;
  const std::string input = "\r\n\n  \t\r\nPING\r\n";
  std::vector<std::string_view> args;
  size_t consumed = 0;
  ASSERT_EQ(parser.Parse(input, &args, &consumed), ParseStatus::kCommand);
  EXPECT_EQ(consumed, input.size());
  EXPECT_EQ(ToCommand(args), (Command{"PING"}));
}

TEST(RespParser, InlineArgsStayValidAfterTheInputIsGone) {
  RespParser parser;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  {
    std::string input = "SET key \"quoted value\"\r\n";
    ASSERT_EQ(parser.Parse(input, &args, &consumed), ParseStatus::kCommand);
    input.assign(input.size(), '#');  // The caller drops the bytes.
  }
  EXPECT_EQ(ToCommand(args), (Command{"SET", "key", "quoted value"}));
}

TEST(RespParser, InlineRequestOverTheLimitIsTooBig) {
  // Default limit, as in Redis: 64 KB without a newline still waits.
  const std::string line(64 * 1024, 'a');
  Connection waiting;
  EXPECT_EQ(waiting.Feed(line), ParseStatus::kNeedMore);
  EXPECT_EQ(waiting.Feed("\n"), ParseStatus::kNeedMore);
  EXPECT_EQ(waiting.commands(), (std::vector<Command>{{line}}));
  EXPECT_EQ(ErrorFor(line + "a"), "ERR Protocol error: too big inline request");

  // A small configured limit, counting the '\r' as Redis does.
  const RespLimits small{.max_inline_len = 8};
  ExpectCommands("PING abc\n", {{"PING", "abc"}}, small);
  ExpectCommands("PING ab\r\n", {{"PING", "ab"}}, small);
  EXPECT_EQ(ErrorFor("PING abc\r\n", small),
            "ERR Protocol error: too big inline request");
}

TEST(RespParser, InlineArgumentCountObeysTheMultibulkLimit) {
  const RespLimits three{.max_multibulk_len = 3};
  ExpectCommands("a b c\r\n", {{"a", "b", "c"}}, three);
  EXPECT_EQ(ErrorFor("a b c d\r\n", three),
            "ERR Protocol error: too many arguments in inline request");
}

TEST(RespParser, ClaimedHugeArrayWithFewBytesAllocatesNothingLarge) {
  Connection connection;
  EXPECT_EQ(connection.Feed("*1048576\r\n$536870912\r\nabc"),
            ParseStatus::kNeedMore);
  EXPECT_LT(connection.parser().memory_usage(), 1024u);
  // A thousand real arguments cost what they are, not what the array claims.
  std::string args;
  for (int i = 0; i < 1000; ++i) args += "$1\r\nx\r\n";
  Connection growing;
  EXPECT_EQ(growing.Feed("*1048576\r\n" + args), ParseStatus::kNeedMore);
  EXPECT_LT(growing.parser().memory_usage(), 64u * 1024);
}

TEST(RespParser, LargeArrayInOneKilobytePiecesCompletes) {
  // 100k arguments, ~1.3 MB, in 1 KB reads: about 1300 Parse() calls. With
  // rescanning from the start this would be ~0.9 GB of work; it must be
  // linear.
  constexpr int kArgs = 100000;
  Command expected;
  expected.reserve(kArgs);
  for (int i = 0; i < kArgs; ++i) expected.push_back("arg" + std::to_string(i));
  const std::string stream = Multibulk(expected);
  Connection connection;
  EXPECT_EQ(connection.FeedInPieces(stream, 1024), ParseStatus::kNeedMore);
  ASSERT_EQ(connection.commands().size(), 1u);
  EXPECT_EQ(connection.commands()[0], expected);
  // The spans were released after the command; the parser is small again.
  EXPECT_LT(connection.parser().memory_usage(), 64u * 1024);
}

TEST(RespParser, BytesAlreadyParsedAreNeverReadAgain) {
  // Shows the O(bytes) promise without a clock: after every 1 KB read, the
  // bytes of each argument the parser already holds (and the array header)
  // are overwritten with '#'. A parser that rescanned from the start would
  // read them as an inline line and go wrong; one that keeps its offsets
  // never looks back. (A rescanning build passes the test above, only ~40x
  // slower, so this is the test that pins the property.)
  constexpr size_t kArgs = 20000;
  Command expected;
  std::string stream = "*" + std::to_string(kArgs) + "\r\n";
  std::vector<size_t> arg_ends;
  for (size_t i = 0; i < kArgs; ++i) {
    expected.push_back("arg" + std::to_string(i));
    stream += "$" + std::to_string(expected.back().size()) + "\r\n" +
              expected.back() + "\r\n";
    arg_ends.push_back(stream.size());
  }
  RespParser parser;
  std::string buffer;
  std::vector<std::string_view> args;
  size_t consumed = 0;
  size_t complete = 0;  // Arguments wholly inside buffer.
  ParseStatus status = ParseStatus::kNeedMore;
  for (size_t at = 0; at < stream.size(); at += 1024) {
    buffer.append(stream, at, 1024);
    status = parser.Parse(buffer, &args, &consumed);
    if (buffer.size() == stream.size()) break;
    ASSERT_EQ(status, ParseStatus::kNeedMore) << "after " << buffer.size();
    while (complete < kArgs && arg_ends[complete] <= buffer.size()) ++complete;
    if (complete > 0) buffer.replace(0, arg_ends[complete - 1],
                                     arg_ends[complete - 1], '#');
  }
  ASSERT_EQ(status, ParseStatus::kCommand);
  EXPECT_EQ(consumed, stream.size());
  ASSERT_EQ(args.size(), kArgs);
  // Early arguments now view '#'s, but their lengths came from the headers
  // when they were first read.
  for (size_t i = 0; i < kArgs; ++i) {
    ASSERT_EQ(args[i].size(), expected[i].size()) << "argument " << i;
  }
  EXPECT_EQ(args.back(), expected.back());
}

TEST(RespParser, LargeBulkInOneKilobytePiecesCompletes) {
  const std::string value(4 * 1024 * 1024 + 7, 'v');
  Connection connection;
  EXPECT_EQ(connection.FeedInPieces(Multibulk({"SET", "k", value}), 1024),
            ParseStatus::kNeedMore);
  EXPECT_EQ(connection.commands(),
            (std::vector<Command>{{"SET", "k", value}}));
}

// Random commands, serialized, concatenated and cut at random points, parse
// back to exactly what was sent.
TEST(RespParser, RandomCommandsSplitAtRandomPointsRoundTrip) {
  std::mt19937_64 rng(20240611);
  auto uniform = [&rng](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  const std::string kInlineAlphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:-_";
  for (int round = 0; round < 50; ++round) {
    std::string stream;
    std::vector<Command> expected;
    for (int c = 0; c < 100; ++c) {
      const uint64_t kind = uniform(0, 9);
      if (kind == 0) {
        stream += uniform(0, 1) ? "*0\r\n" : "*-1\r\n";  // Skipped.
        continue;
      }
      Command command(uniform(1, 8));
      if (kind == 1) {  // Inline, plain tokens.
        for (std::string& arg : command) {
          for (uint64_t n = uniform(1, 12); n > 0; --n) {
            arg += kInlineAlphabet[uniform(0, kInlineAlphabet.size() - 1)];
          }
          stream += arg + " ";
        }
        stream += uniform(0, 1) ? "\r\n" : "\n";
      } else {  // Multibulk, any bytes, now and then a long one.
        for (std::string& arg : command) {
          const uint64_t length = uniform(0, 9) == 0 ? uniform(0, 5000)
                                                     : uniform(0, 40);
          for (uint64_t n = 0; n < length; ++n) {
            arg += static_cast<char>(uniform(0, 255));
          }
        }
        stream += Multibulk(command);
      }
      expected.push_back(std::move(command));
    }
    stream += Multibulk({"PING"});  // So no skipped empties trail the stream.
    expected.push_back({"PING"});

    Connection connection;
    for (size_t at = 0; at < stream.size();) {
      const size_t piece = uniform(1, 300);
      ASSERT_EQ(connection.Feed(std::string_view(stream).substr(at, piece)),
                ParseStatus::kNeedMore)
          << "round " << round << ": " << connection.parser().error();
      at += piece;
    }
    ASSERT_EQ(connection.commands(), expected) << "round " << round;
    EXPECT_TRUE(connection.buffer().empty());
  }
}

TEST(RespParser, ParseStatusHasReadableNames) {
  EXPECT_STREQ(ToString(ParseStatus::kCommand), "command");
  EXPECT_STREQ(ToString(ParseStatus::kNeedMore), "need-more");
  EXPECT_STREQ(ToString(ParseStatus::kError), "error");
}


// --- The fast path for a whole multibulk (TryWholeMultibulk). ---

// Pipelined commands whose bulks have 0, 1, 2, 3 and 5-digit lengths, with
// CR, LF and NUL inside the data: what the fast path reads whole.
std::string FastPathStream(std::vector<Command>* commands) {
  *commands = {{"BF.EXISTS", "bf", "item:1"},
               {"BF.ADD", std::string(10, 'k'), std::string(99, 'v')},
               {"ECHO", ""},
               {"SET", "a\r\nb", std::string(12345, '\n')},
               {"X", "\0\r"s, std::string(100, '\r'), "z"}};
  std::string out;
  for (const Command& c : *commands) out += Multibulk(c);
  return out;
}

TEST(RespParser, WholePipelinedCommandsComeOutExactlyAsSent) {
  std::vector<Command> expected;
  const std::string input = FastPathStream(&expected);
  ExpectCommands(input, expected);
}

TEST(RespParser, ABulkSplitAtEveryByteGivesTheSameCommands) {
  // Every way to cut the stream into two reads (the first part taken by the
  // state machine, the rest often whole again), and every byte on its own.
  std::vector<Command> expected;
  const std::string input = FastPathStream(&expected);
  for (size_t cut = 1; cut < input.size(); ++cut) {
    Connection connection;
    ASSERT_EQ(connection.Feed(std::string_view(input).substr(0, cut)), ParseStatus::kNeedMore)
        << "cut at " << cut;
    ASSERT_EQ(connection.Feed(std::string_view(input).substr(cut)), ParseStatus::kNeedMore)
        << "cut at " << cut;
    ASSERT_EQ(connection.commands(), expected) << "cut at " << cut;
    ASSERT_TRUE(connection.buffer().empty()) << "cut at " << cut;
  }
  Connection bytewise;
  EXPECT_EQ(bytewise.FeedInPieces(input, 1), ParseStatus::kNeedMore);
  EXPECT_EQ(bytewise.commands(), expected);
}

TEST(RespParser, ABulkSplitIntoThreeReadsAtEveryPairOfBytesGivesTheSameCommand) {
  const Command command = {"BF.ADD", "bf", "0123456789ab"};
  const std::string input = Multibulk(command) + Multibulk(command);
  for (size_t a = 1; a < input.size(); ++a) {
    for (size_t b = a + 1; b < input.size(); ++b) {
      Connection connection;
      connection.Feed(std::string_view(input).substr(0, a));
      connection.Feed(std::string_view(input).substr(a, b - a));
      ASSERT_EQ(connection.Feed(std::string_view(input).substr(b)), ParseStatus::kNeedMore);
      ASSERT_EQ(connection.commands(), (std::vector<Command>{command, command}))
          << "cuts at " << a << " and " << b;
    }
  }
}

TEST(RespParser, CompleteCommandsWithBadHeadersGetTheStateMachinesErrors) {
  // Each input holds every byte its command claims, so the fast path sees a
  // whole command and must refuse it exactly as the byte-by-byte parse does.
  EXPECT_EQ(ErrorFor("*1\r\n$01\r\na\r\n"), "ERR Protocol error: invalid bulk length");
  EXPECT_EQ(ErrorFor("*01\r\n$1\r\na\r\n"), "ERR Protocol error: invalid multibulk length");
  EXPECT_EQ(ErrorFor("*1\r\n$+1\r\na\r\n"), "ERR Protocol error: invalid bulk length");
  EXPECT_EQ(ErrorFor("*1\r\n$1 \r\na\r\n"), "ERR Protocol error: invalid bulk length");
  EXPECT_EQ(ErrorFor("*2\r\n$3\r\nabc\r\n:1\r\nxxxxxx"),
            "ERR Protocol error: expected '$', got ':'");
  EXPECT_EQ(ErrorFor("*1\r\n$3\r\nabcXYzzzzzz"),
            "ERR Protocol error: expected CRLF after bulk data");
  EXPECT_EQ(ErrorFor("*1\r\n$3\r\nabc\rXzzzzzz"),
            "ERR Protocol error: expected CRLF after bulk data");
  EXPECT_EQ(ErrorFor("*1\r\n$3\r\nabcX\nzzzzzz"),
            "ERR Protocol error: expected CRLF after bulk data");
  EXPECT_EQ(ErrorFor("*1\n$3\r\nabc\r\n"), "ERR Protocol error: invalid multibulk length");
  EXPECT_EQ(ErrorFor("*1\r\n$3\rxabc\r\n"), "ERR Protocol error: invalid bulk length");
  // Over the limits, with the data present.
  RespLimits small;
  small.max_bulk_len = 4;
  EXPECT_EQ(ErrorFor("*1\r\n$5\r\nabcde\r\n", small), "ERR Protocol error: invalid bulk length");
  std::string eleven = "*11\r\n";
  for (int i = 0; i < 11; ++i) eleven += "$1\r\na\r\n";
  EXPECT_EQ(ErrorFor(eleven, kUnauthenticatedLimits),
            "ERR Protocol error: unauthenticated multibulk length");
  // 19 digits: past what the fast path reads, and past every limit.
  EXPECT_EQ(ErrorFor("*1\r\n$1000000000000000000\r\na\r\n"),
            "ERR Protocol error: invalid bulk length");
}

TEST(RespParser, LengthsAtTheLimitsAreStillAccepted) {
  RespLimits small;
  small.max_bulk_len = 4;
  small.max_multibulk_len = 2;
  ExpectCommands("*2\r\n$4\r\nabcd\r\n$0\r\n\r\n", {{"abcd", ""}}, small);
}

}  // namespace
}  // namespace bloomgate
