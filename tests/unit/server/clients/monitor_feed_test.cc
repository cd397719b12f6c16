// MONITOR: Redis's line format and quoting, the sink's memory bound, and
// what the dispatcher feeds (after the command ran, EXEC's commands before
// "exec", secrets redacted, admin commands left out). The connection's side
// (RESP2/RESP3, output limits, threads) is in tests/e2e/test_pause_monitor.py.
#include "server/clients/monitor_feed.h"

#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate {
namespace {

using testing::Err;
using testing::Int;
using testing::MakeServer;
using testing::Session;
using testing::Simple;

std::string Quoted(std::string_view arg) {
  std::string out;
  AppendQuoted(&out, arg);
  return out;
}

TEST(MonitorFormat, QuotesAndEscapesAsRedisSdscatrepr) {
  EXPECT_EQ(Quoted("keys"), "\"keys\"");
  EXPECT_EQ(Quoted(""), "\"\"");
  EXPECT_EQ(Quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quoted("\r\n\t\a\b"), "\"\\r\\n\\t\\a\\b\"");
  EXPECT_EQ(Quoted(std::string("\x00\x7f\xff ~", 5)), "\"\\x00\\x7f\\xff ~\"");
}

TEST(MonitorFormat, TheLineHasRedisLayout) {
  std::vector<std::string_view> args = {"keys", "*"};
  EXPECT_EQ(FormatMonitorLine(1339518083107412, "127.0.0.1:60866", args),
            "+1339518083.107412 [0 127.0.0.1:60866] \"keys\" \"*\"\r\n");
  EXPECT_EQ(FormatMonitorLine(5000001, "[::1]:7", std::vector<std::string_view>{"ping"}),
            "+5.000001 [0 [::1]:7] \"ping\"\r\n");
}

TEST(MonitorSink, WakesOnceUntilDrainedAndStopsAtItsLimit) {
  int wakes = 0;
  MonitorSink sink([&] { ++wakes; });
  sink.Push("abc", /*limit=*/8);
  sink.Push("def", 8);
  EXPECT_EQ(wakes, 1);
  bool overflowed = true;
  EXPECT_EQ(sink.Take(&overflowed), "abcdef");
  EXPECT_FALSE(overflowed);
  sink.Push("12345", 8);
  sink.Push("6789", 8);  // 9 bytes pending > 8
  EXPECT_EQ(wakes, 2);
  EXPECT_EQ(sink.Take(&overflowed), "");
  EXPECT_TRUE(overflowed);
  sink.Push("x", 8);
  EXPECT_EQ(sink.Take(&overflowed), "") << "nothing is kept once over the limit";
}

// A sink on the server's feed that collects the lines, without timestamps.
class Collected {
 public:
  explicit Collected(ServerContext* server) : server_(server) {
    sink_ = std::make_shared<MonitorSink>([] {});
    server_->monitors.Add(sink_);
  }
  ~Collected() { server_->monitors.Remove(sink_.get()); }
  // The lines since the last call, each without "+<time> [0 <addr>] ".
  std::vector<std::string> Lines() {
    bool overflowed = false;
    std::string text = sink_->Take(&overflowed);
    std::vector<std::string> lines;
    static const std::regex kPrefix(R"(^\+\d+\.\d{6} \[0 \] )");
    size_t start = 0;
    for (size_t end; (end = text.find("\r\n", start)) != std::string::npos; start = end + 2) {
      std::string line = text.substr(start, end - start);
      EXPECT_TRUE(std::regex_search(line, kPrefix)) << line;
      lines.push_back(std::regex_replace(line, kPrefix, ""));
    }
    return lines;
  }

 private:
  ServerContext* server_;
  std::shared_ptr<MonitorSink> sink_;
};

using Lines = std::vector<std::string>;

TEST(MonitorDispatch, ShowsCommandsThatRanEvenFailedOnesButNotRefusedOnes) {
  auto server = MakeServer();
  Session s(server.get());
  Collected monitor(server.get());
  s.Run({"BF.ADD", "k", "a b"});
  s.Run({"BF.RESERVE", "k", "0.01", "100"});  // runs and fails: shown, as Redis
  s.Run({"NOSUCH"});                         // refused before it runs: not shown
  s.Run({"BF.ADD", "k"});                    // wrong arity: not shown
  EXPECT_EQ(monitor.Lines(),
            (Lines{"\"BF.ADD\" \"k\" \"a b\"", "\"BF.RESERVE\" \"k\" \"0.01\" \"100\""}));
}

TEST(MonitorDispatch, ATransactionShowsMultiThenItsCommandsThenExec) {
  auto server = MakeServer();
  Session s(server.get());
  Collected monitor(server.get());
  s.Run({"MULTI"});
  s.Run({"BF.ADD", "k", "a"});
  EXPECT_EQ(monitor.Lines(), (Lines{"\"MULTI\""})) << "nothing shows while queued";
  s.Run({"EXEC"});
  EXPECT_EQ(monitor.Lines(), (Lines{"\"BF.ADD\" \"k\" \"a\"", "\"EXEC\""}));
}

TEST(MonitorDispatch, SecretsAreRedactedAndAdminCommandsLeftOut) {
  auto server = MakeServer();
  Session s(server.get());
  Collected monitor(server.get());
  s.Run({"AUTH", "not-a-password"});
  s.Run({"AUTH", "someone", "secret"});
  s.Run({"HELLO", "2", "SETNAME", "n", "AUTH", "default", "secret"});
  s.Run({"ACL", "SETUSER", "u", ">secret"});
  s.Run({"CONFIG", "SET", "requirepass", "secret"});
  s.Run({"CLIENT", "PAUSE", "0"});
  EXPECT_EQ(monitor.Lines(),
            (Lines{"\"AUTH\" \"(redacted)\"", "\"AUTH\" \"(redacted)\" \"(redacted)\"",
                   "\"HELLO\" \"2\" \"SETNAME\" \"n\" \"AUTH\" \"(redacted)\" \"(redacted)\""}));
}

TEST(MonitorDispatch, AMonitorMayNotTouchKeysButMayPingAndReset) {
  auto server = MakeServer();
  Session s(server.get());
  ASSERT_EQ(s.Run({"MONITOR"}), Simple("OK"));
  EXPECT_TRUE(s.client().monitor);
  EXPECT_EQ(s.Run({"BF.ADD", "k", "a"}), Err(errors::kReplicaKeyspace));
  EXPECT_EQ(s.Run({"EXISTS", "k"}), Err(errors::kReplicaKeyspace));
  EXPECT_EQ(s.Run({"PING"}), Simple("PONG"));
  EXPECT_EQ(s.Run({"MONITOR"}), "") << "again: ignored without a reply, as Redis";
  EXPECT_EQ(s.Run({"RESET"}), Simple("RESET"));
  EXPECT_FALSE(s.client().monitor);
  EXPECT_EQ(s.Run({"BF.ADD", "k", "a"}), Int(1));
}

TEST(MonitorDispatch, MonitorInsideATransactionIsRefused) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"MULTI"});
  EXPECT_EQ(s.Run({"MONITOR"}), Simple("QUEUED"));
  EXPECT_EQ(s.Run({"EXEC"}), testing::Arr(1) + Err(errors::kMonitorDenyBlocking));
  EXPECT_FALSE(s.client().monitor);
}

}  // namespace
}  // namespace bloomgate
