#include "server/resp/reply_builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace bloomgate {
namespace {

using namespace std::string_literals;

// One builder per protocol, writing into its own buffer.
struct Builders {
  std::string out2, out3;
  ReplyBuilder resp2{&out2}, resp3{&out3};
  Builders() { resp3.set_resp3(true); }
};

TEST(ReplyBuilder, StartsInResp2AndSwitchesToResp3) {
  std::string out;
  ReplyBuilder reply(&out);
  EXPECT_FALSE(reply.resp3());
  reply.set_resp3(true);
  EXPECT_TRUE(reply.resp3());
  EXPECT_EQ(reply.buffer(), &out);
}

TEST(ReplyBuilder, AppendsBehindWhatTheBufferAlreadyHolds) {
  std::string out = "+PONG\r\n";
  ReplyBuilder reply(&out);
  reply.Ok();
  EXPECT_EQ(out, "+PONG\r\n+OK\r\n");
}

TEST(ReplyBuilder, SimpleStringAndOkAreTheSameInBothProtocols) {
  Builders b;
  for (ReplyBuilder* reply : {&b.resp2, &b.resp3}) {
    reply->SimpleString("QUEUED");
    reply->Ok();
    reply->SimpleString("");
  }
  EXPECT_EQ(b.out2, "+QUEUED\r\n+OK\r\n+\r\n");
  EXPECT_EQ(b.out3, b.out2);
}

TEST(ReplyBuilder, SimpleStringReplacesCrAndLfWithSpaces) {
  std::string out;
  ReplyBuilder reply(&out);
  reply.SimpleString("a\r\n+OK\nb\rc");
  EXPECT_EQ(out, "+a  +OK b c\r\n");
}

TEST(ReplyBuilder, ErrorWritesTheWholeLineAfterADash) {
  Builders b;
  b.resp2.Error("ERR syntax error");
  b.resp3.Error("ERR syntax error");
  EXPECT_EQ(b.out2, "-ERR syntax error\r\n");
  EXPECT_EQ(b.out3, b.out2);
}

TEST(ReplyBuilder, ErrorWithoutCodeGoesOutVerbatim) {
  // RedisBloom's "Bad capacity" reaches the wire as "-Bad capacity".
  std::string out;
  ReplyBuilder reply(&out);
  reply.Error("Bad capacity");
  EXPECT_EQ(out, "-Bad capacity\r\n");
}

TEST(ReplyBuilder, ErrorReplacesCrAndLfSoUserTextCannotBreakFraming) {
  std::string out;
  ReplyBuilder reply(&out);
  reply.Error("ERR unknown command 'a\r\n*1\r\n$4\r\nPING\r\n'");
  EXPECT_EQ(out, "-ERR unknown command 'a  *1  $4  PING  '\r\n");
  EXPECT_EQ(out.find('\r'), out.size() - 2);
  EXPECT_EQ(out.find('\n'), out.size() - 1);
}

TEST(ReplyBuilder, CountsEveryErrorItWrites) {
  std::string out;
  ReplyBuilder reply(&out);
  EXPECT_EQ(reply.errors_written(), 0u);
  reply.Ok();
  reply.Integer(1);
  reply.Null();
  EXPECT_EQ(reply.errors_written(), 0u);
  reply.Error("ERR one");
  reply.ErrorWithErrPrefix("two");
  reply.ErrorWithErrPrefix("WRONGTYPE three");
  EXPECT_EQ(reply.errors_written(), 3u);
}

TEST(ReplyBuilder, ErrorWithErrPrefixKeepsAnUpperCaseCode) {
  std::string out;
  ReplyBuilder reply(&out);
  reply.ErrorWithErrPrefix("WRONGTYPE Operation against a key holding the wrong kind of value");
  reply.ErrorWithErrPrefix("NOAUTH Authentication required.");
  reply.ErrorWithErrPrefix("ERR already prefixed");
  EXPECT_EQ(out,
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
            "-NOAUTH Authentication required.\r\n"
            "-ERR already prefixed\r\n");
}

TEST(ReplyBuilder, ErrorWithErrPrefixAddsErrToTextWithoutACode) {
  std::string out;
  ReplyBuilder reply(&out);
  reply.ErrorWithErrPrefix("value is out of range");
  reply.ErrorWithErrPrefix("Bad capacity");         // mixed case: not a code
  reply.ErrorWithErrPrefix("config file x: oops");  // lower case
  reply.ErrorWithErrPrefix(" LEADING space");       // empty first word
  reply.ErrorWithErrPrefix("");
  EXPECT_EQ(out,
            "-ERR value is out of range\r\n"
            "-ERR Bad capacity\r\n"
            "-ERR config file x: oops\r\n"
            "-ERR  LEADING space\r\n"
            "-ERR \r\n");
}

TEST(ReplyBuilder, ErrorWithErrPrefixAlsoReplacesCrAndLf) {
  std::string out;
  ReplyBuilder reply(&out);
  reply.ErrorWithErrPrefix("bad value 'a\r\nb'");
  reply.ErrorWithErrPrefix("OOM x\ny");
  EXPECT_EQ(out, "-ERR bad value 'a  b'\r\n-OOM x y\r\n");
}

TEST(ReplyBuilder, IntegerCoversTheWholeInt64Range) {
  Builders b;
  for (ReplyBuilder* reply : {&b.resp2, &b.resp3}) {
    reply->Integer(0);
    reply->Integer(-1);
    reply->Integer(42);
    reply->Integer(std::numeric_limits<int64_t>::max());
    reply->Integer(std::numeric_limits<int64_t>::min());
  }
  EXPECT_EQ(b.out2, ":0\r\n:-1\r\n:42\r\n:9223372036854775807\r\n:-9223372036854775808\r\n");
  EXPECT_EQ(b.out3, b.out2);
}

TEST(ReplyBuilder, BulkIsBinarySafeAndLengthPrefixed) {
  Builders b;
  const std::string binary = "a\r\nb\0c"s;
  for (ReplyBuilder* reply : {&b.resp2, &b.resp3}) {
    reply->Bulk("hello");
    reply->Bulk("");
    reply->Bulk(binary);
  }
  EXPECT_EQ(b.out2, "$5\r\nhello\r\n$0\r\n\r\n$6\r\na\r\nb\0c\r\n"s);
  EXPECT_EQ(b.out3, b.out2);
}

TEST(ReplyBuilder, NullIsNilBulkInResp2AndUnderscoreInResp3) {
  Builders b;
  b.resp2.Null();
  b.resp3.Null();
  EXPECT_EQ(b.out2, "$-1\r\n");
  EXPECT_EQ(b.out3, "_\r\n");
}

TEST(ReplyBuilder, NullArrayIsNilArrayInResp2AndUnderscoreInResp3) {
  Builders b;
  b.resp2.NullArray();
  b.resp3.NullArray();
  EXPECT_EQ(b.out2, "*-1\r\n");
  EXPECT_EQ(b.out3, "_\r\n");
}

TEST(ReplyBuilder, BoolIsIntegerInResp2AndBooleanInResp3) {
  Builders b;
  for (ReplyBuilder* reply : {&b.resp2, &b.resp3}) {
    reply->Bool(true);
    reply->Bool(false);
  }
  EXPECT_EQ(b.out2, ":1\r\n:0\r\n");
  EXPECT_EQ(b.out3, "#t\r\n#f\r\n");
}

TEST(ReplyBuilder, BoolsWritesWhatBoolWouldForEachValueAfterWhatIsThere) {
  const std::vector<bool> values = {true, false, false, true, true};
  for (const bool resp3 : {false, true}) {
    std::string one_by_one = "*5\r\n", batch = "*5\r\n";
    ReplyBuilder each(&one_by_one), all(&batch);
    each.set_resp3(resp3);
    all.set_resp3(resp3);
    for (const bool value : values) each.Bool(value);
    all.Bools(values);
    EXPECT_EQ(batch, one_by_one);
    all.Bools({});
    EXPECT_EQ(batch, one_by_one);
  }
}

TEST(ReplyBuilder, DoubleIsBulkInResp2AndCommaTypeInResp3) {
  Builders b;
  b.resp2.Double(3.14);
  b.resp3.Double(3.14);
  EXPECT_EQ(b.out2, "$4\r\n3.14\r\n");
  EXPECT_EQ(b.out3, ",3.14\r\n");
}

TEST(ReplyBuilder, DoubleUsesTheShortestTextThatReadsBack) {
  std::string out;
  ReplyBuilder reply(&out);
  reply.set_resp3(true);
  reply.Double(1.0);
  reply.Double(0.1);
  reply.Double(-2.5);
  reply.Double(0.0);
  reply.Double(1e300);
  reply.Double(0.005);
  EXPECT_EQ(out, ",1\r\n,0.1\r\n,-2.5\r\n,0\r\n,1e+300\r\n,0.005\r\n");
}

TEST(ReplyBuilder, DoubleWritesInfinitiesAndNanAsRedisDoes) {
  Builders b;
  for (ReplyBuilder* reply : {&b.resp2, &b.resp3}) {
    reply->Double(std::numeric_limits<double>::infinity());
    reply->Double(-std::numeric_limits<double>::infinity());
    reply->Double(std::nan(""));
  }
  EXPECT_EQ(b.out2, "$3\r\ninf\r\n$4\r\n-inf\r\n$3\r\nnan\r\n");
  EXPECT_EQ(b.out3, ",inf\r\n,-inf\r\n,nan\r\n");
}

TEST(ReplyBuilder, DoubleTextParsesBackToTheSameValue) {
  for (double value : {0.1, 1.0 / 3.0, 123456.789, 1e-7, 2.2250738585072014e-308,
                       1.7976931348623157e308}) {
    std::string out;
    ReplyBuilder reply(&out);
    reply.set_resp3(true);
    reply.Double(value);
    ASSERT_EQ(out.front(), ',');
    ASSERT_EQ(out.substr(out.size() - 2), "\r\n");
    EXPECT_EQ(std::stod(out.substr(1, out.size() - 3)), value) << out;
  }
}

TEST(ReplyBuilder, ArrayHeaderIsTheSameInBothProtocols) {
  Builders b;
  for (ReplyBuilder* reply : {&b.resp2, &b.resp3}) {
    reply->ArrayHeader(0);
    reply->ArrayHeader(3);
  }
  EXPECT_EQ(b.out2, "*0\r\n*3\r\n");
  EXPECT_EQ(b.out3, b.out2);
}

TEST(ReplyBuilder, MapFallsBackToAFlatArrayOfTwiceThePairsInResp2) {
  Builders b;
  b.resp2.MapHeader(5);
  b.resp2.MapHeader(0);
  b.resp3.MapHeader(5);
  b.resp3.MapHeader(0);
  EXPECT_EQ(b.out2, "*10\r\n*0\r\n");
  EXPECT_EQ(b.out3, "%5\r\n%0\r\n");
}

TEST(ReplyBuilder, SetFallsBackToAnArrayInResp2) {
  Builders b;
  b.resp2.SetHeader(3);
  b.resp3.SetHeader(3);
  b.resp2.SetHeader(0);
  b.resp3.SetHeader(0);
  EXPECT_EQ(b.out2, "*3\r\n*0\r\n");
  EXPECT_EQ(b.out3, "~3\r\n~0\r\n");
}

TEST(ReplyBuilder, VerbatimIsTxtInResp3AndBulkInResp2) {
  Builders b;
  b.resp2.Verbatim("# Server\r\nredis_version:8.0.0\r\n");
  b.resp3.Verbatim("# Server\r\nredis_version:8.0.0\r\n");
  EXPECT_EQ(b.out2, "$31\r\n# Server\r\nredis_version:8.0.0\r\n\r\n");
  EXPECT_EQ(b.out3, "=35\r\ntxt:# Server\r\nredis_version:8.0.0\r\n\r\n");
}

TEST(ReplyBuilder, EmptyVerbatimStillCarriesItsFormat) {
  Builders b;
  b.resp2.Verbatim("");
  b.resp3.Verbatim("");
  EXPECT_EQ(b.out2, "$0\r\n\r\n");
  EXPECT_EQ(b.out3, "=4\r\ntxt:\r\n");
}

TEST(ReplyBuilder, NestedRepliesConcatenateInOrder) {
  // BF.INFO's full RESP3 reply shape: a map of simple strings to values.
  Builders b;
  for (ReplyBuilder* reply : {&b.resp2, &b.resp3}) {
    reply->MapHeader(2);
    reply->SimpleString("Capacity");
    reply->Integer(100);
    reply->SimpleString("Expansion rate");
    reply->Null();
  }
  EXPECT_EQ(b.out2, "*4\r\n+Capacity\r\n:100\r\n+Expansion rate\r\n$-1\r\n");
  EXPECT_EQ(b.out3, "%2\r\n+Capacity\r\n:100\r\n+Expansion rate\r\n_\r\n");
}

}  // namespace
}  // namespace bloomgate
