// SLOWLOG, LATENCY, CONFIG RESETSTAT and INFO's dashboard fields through the
// dispatcher: Redis's reply shapes and texts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <string>

#include "server/cluster/cluster_state.h"
#include "server/stats/latency_histogram.h"
#include "server/stats/slow_log.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

// The value of `field` in an INFO reply ("" if absent).
std::string InfoField(const std::string& info, const std::string& field) {
  size_t at = info.find("\r\n" + field + ":");
  if (at == std::string::npos) return "";
  at += field.size() + 3;
  return info.substr(at, info.find("\r\n", at) - at);
}

ServerConfig LogEverything() {
  ServerConfig config;
  config.slowlog_log_slower_than = 0;  // every command is "slow"
  return config;
}

TEST(Slowlog, EveryCommandOverTheThresholdIsLoggedNewestFirst) {
  auto server = MakeServer(LogEverything());
  Session s(server.get());
  s.Run({"BF.ADD", "k", "a"});
  s.Run({"PING"});
  EXPECT_EQ(s.Run({"SLOWLOG", "LEN"}), Int(2));
  // GET (itself logged only after it runs): LEN, PING, then BF.ADD.
  std::string reply = s.Run({"SLOWLOG", "GET", "3"});
  ASSERT_EQ(reply.rfind(Arr(3) + Arr(6) + Int(2), 0), 0u) << reply;
  EXPECT_NE(reply.find(Arr(1) + Bulk("PING")), std::string::npos) << reply;
  EXPECT_NE(reply.find(Arr(3) + Bulk("BF.ADD") + Bulk("k") + Bulk("a")), std::string::npos)
      << reply;
  EXPECT_LT(reply.find("PING"), reply.find("BF.ADD")) << reply;
}

TEST(Slowlog, ResetEmptiesItAndMinusOneDisablesIt) {
  ServerConfig config = LogEverything();
  auto server = MakeServer(config);
  Session s(server.get());
  s.Run({"PING"});
  EXPECT_EQ(s.Run({"SLOWLOG", "RESET"}), kOk);
  EXPECT_EQ(s.Run({"SLOWLOG", "LEN"}), Int(1));  // the RESET itself, logged after it ran
  EXPECT_EQ(s.Run({"CONFIG", "SET", "slowlog-log-slower-than", "-1"}), kOk);
  s.Run({"SLOWLOG", "RESET"});
  s.Run({"PING"});
  EXPECT_EQ(s.Run({"SLOWLOG", "LEN"}), Int(0));
}

TEST(Slowlog, MaxLenKeepsTheNewestAndLoweringItTrimsAtOnce) {
  ServerConfig config = LogEverything();
  config.slowlog_max_len = 3;
  auto server = MakeServer(config);
  Session s(server.get());
  for (int i = 0; i < 10; ++i) s.Run({"PING"});
  EXPECT_EQ(s.Run({"SLOWLOG", "LEN"}), Int(3));
  EXPECT_EQ(s.Run({"CONFIG", "SET", "slowlog-max-len", "1"}), kOk);
  EXPECT_EQ(s.Run({"SLOWLOG", "LEN"}), Int(1));
}

TEST(Slowlog, GetChecksItsCountAsRedis) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"SLOWLOG", "GET", "-2"}),
            Err("ERR count should be greater than or equal to -1"));
  EXPECT_EQ(s.Run({"SLOWLOG", "GET", "x"}), Err("ERR value is not an integer or out of range"));
  EXPECT_EQ(s.Run({"SLOWLOG", "GET", "-1"}), Arr(0));
  EXPECT_EQ(s.Run({"SLOWLOG", "GET", "1", "2"}), WrongArity("slowlog|get"));
  EXPECT_EQ(s.Run({"SLOWLOG", "NOPE"}),
            Err("ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP."));
  EXPECT_EQ(s.Run({"SLOWLOG", "HELP"}).rfind(Arr(12) + "+SLOWLOG <subcommand>", 0), 0u);
}

TEST(Slowlog, AuthArgumentsAreRedacted) {
  ServerConfig config = LogEverything();
  config.requirepass = "s3cret";
  auto server = MakeServer(config);
  Session s(server.get());
  s.Run({"AUTH", "s3cret"});
  std::string reply = s.Run({"SLOWLOG", "GET", "1"});
  EXPECT_EQ(reply.find("s3cret"), std::string::npos) << reply;
  EXPECT_NE(reply.find(Arr(2) + Bulk("AUTH") + Bulk("(redacted)")), std::string::npos) << reply;
}

TEST(Slowlog, ARuntimePasswordIsRedacted) {
  auto server = MakeServer(LogEverything());
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "SET", "maxclients", "50", "requirepass", "hunter2"}), kOk);
  std::string reply = s.Run({"SLOWLOG", "GET", "1"});
  EXPECT_EQ(reply.find("hunter2"), std::string::npos) << reply;
  EXPECT_NE(reply.find(Arr(6) + Bulk("CONFIG") + Bulk("SET") + Bulk("(redacted)")),
            std::string::npos)
      << reply;
}

TEST(Slowlog, AclSetuserRulesAreRedacted) {
  auto server = MakeServer(LogEverything());
  Session s(server.get());
  EXPECT_EQ(s.Run({"ACL", "SETUSER", "edge", "on", ">hunter2", "+@all"}), kOk);
  std::string reply = s.Run({"SLOWLOG", "GET", "1"});
  EXPECT_EQ(reply.find("hunter2"), std::string::npos) << reply;
  EXPECT_NE(reply.find(Arr(6) + Bulk("ACL") + Bulk("SETUSER") + Bulk("edge") +
                       Bulk("(redacted)")),
            std::string::npos)
      << reply;
}

TEST(SlowLogEntries, ArgumentsAreCutAsRedisCutsThem) {
  SlowLog log;
  std::vector<std::string> storage;
  storage.push_back("BF.MADD");
  storage.push_back(std::string(200, 'x'));
  for (int i = 0; i < 40; ++i) storage.push_back("i" + std::to_string(i));
  std::vector<std::string_view> args(storage.begin(), storage.end());
  log.Add(args, args.size(), 1, 2, "1.2.3.4:5", "name", /*max_len=*/10);
  auto entries = log.Newest(1);
  ASSERT_EQ(entries.size(), 1u);
  const SlowLogEntry& entry = entries[0];
  ASSERT_EQ(entry.args.size(), SlowLog::kMaxArgs);
  EXPECT_EQ(entry.args[1], std::string(128, 'x') + "... (72 more bytes)");
  EXPECT_EQ(entry.args[30], "i28");
  // 42 arguments, 31 shown: the 32nd says 11 more.
  EXPECT_EQ(entry.args[31], "... (11 more arguments)");
  EXPECT_EQ(entry.client_addr, "1.2.3.4:5");
  EXPECT_EQ(entry.client_name, "name");
}

TEST(Latency, OffByDefaultAndEverySlowCommandOnceOn) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"PING"});
  EXPECT_EQ(s.Run({"LATENCY", "LATEST"}), Arr(0));
  // The monitor's own record path, as a command slower than 5 ms records it.
  server->latency.Add("command", 1000, 7);
  server->latency.Add("command", 1000, 9);  // same second: one sample, its worst
  server->latency.Add("command", 1001, 6);
  EXPECT_EQ(s.Run({"LATENCY", "LATEST"}),
            Arr(1) + Arr(4) + Bulk("command") + Int(1001) + Int(6) + Int(9));
  EXPECT_EQ(s.Run({"LATENCY", "HISTORY", "command"}),
            Arr(2) + Arr(2) + Int(1000) + Int(9) + Arr(2) + Int(1001) + Int(6));
  EXPECT_EQ(s.Run({"LATENCY", "HISTORY", "nosuch"}), Arr(0));
  EXPECT_EQ(s.Run({"LATENCY", "RESET", "nosuch"}), Int(0));
  EXPECT_EQ(s.Run({"LATENCY", "RESET"}), Int(1));
  EXPECT_EQ(s.Run({"LATENCY", "LATEST"}), Arr(0));
}

TEST(Latency, HistogramCountsEveryCallOfTheNamedCommands) {
  auto server = MakeServer();
  Session s(server.get());
  for (int i = 0; i < 5; ++i) s.Run({"PING"});
  s.Run({"CLIENT", "ID"});
  std::string reply = s.Run({"LATENCY", "HISTOGRAM", "ping", "client", "nosuch"});
  // Two commands, in the order named; the last point of each histogram
  // holds every call.
  ASSERT_EQ(reply.rfind(Arr(4) + Bulk("ping") + Arr(4) + Bulk("calls") + Int(5) +
                            Bulk("histogram_usec"),
                        0),
            0u)
      << reply;
  size_t client = reply.find(Bulk("client|id") + Arr(4) + Bulk("calls") + Int(1));
  ASSERT_NE(client, std::string::npos) << reply;
  EXPECT_EQ(reply.substr(client - Int(5).size(), Int(5).size()), Int(5)) << reply;
  EXPECT_EQ(reply.substr(reply.size() - Int(1).size()), Int(1)) << reply;
  s.set_resp3(true);
  EXPECT_EQ(s.Run({"LATENCY", "HISTOGRAM", "nosuch"}), Map(0));
}

TEST(ConfigResetStat, CountersStartAgainFromZero) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"PING"});
  s.Run({"NOSUCH"});
  s.Run({"BF.RESERVE", "k", "x", "10"});
  std::string before = s.Run({"INFO", "everything"});
  EXPECT_NE(before.find("cmdstat_ping:calls=1,"), std::string::npos) << before;
  EXPECT_EQ(InfoField(before, "errorstat_ERR"), "count=2") << before;
  EXPECT_EQ(s.Run({"CONFIG", "RESETSTAT"}), kOk);
  std::string after = s.Run({"INFO", "everything"});
  EXPECT_EQ(after.find("cmdstat_ping"), std::string::npos) << after;
  EXPECT_EQ(InfoField(after, "errorstat_ERR"), "") << after;
  // The RESETSTAT itself counted nothing; the INFO before this one did.
  EXPECT_EQ(InfoField(after, "total_commands_processed"), "1") << after;
  EXPECT_EQ(s.Run({"LATENCY", "HISTOGRAM", "ping"}), Arr(0));
}

TEST(InfoDashboards, ErrorStatsCountEachCode) {
  auto server = MakeServer();
  Session s(server.get());
  InsertCuckooKey(server.get(), "cf");
  s.Run({"BF.ADD", "cf", "x"});
  s.Run({"BF.ADD", "cf", "y"});
  s.Run({"GET"});
  std::string info = s.Run({"INFO", "errorstats"});
  EXPECT_EQ(InfoField(info, "errorstat_WRONGTYPE"), "count=2") << info;
  EXPECT_EQ(InfoField(info, "errorstat_ERR"), "count=1") << info;
}

TEST(InfoDashboards, MemoryPeakStaysAfterTheFilterIsGone) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"BF.RESERVE", "big", "0.01", "100000"});
  std::string with = s.Run({"INFO", "memory"});
  s.Run({"DEL", "big"});
  std::string without = s.Run({"INFO", "memory"});
  EXPECT_GT(std::stoull(InfoField(with, "used_memory")), 100000u) << with;
  EXPECT_EQ(InfoField(without, "used_memory"), "0") << without;
  EXPECT_EQ(InfoField(without, "used_memory_peak"), InfoField(with, "used_memory")) << without;
  EXPECT_FALSE(InfoField(without, "used_memory_peak_human").empty());
  EXPECT_FALSE(InfoField(without, "mem_fragmentation_ratio").empty());
}

TEST(InfoDashboards, ConfigGetMaxmemoryIsTheLimitInfoReports) {
  auto server = MakeServer();  // maxmemory 0: derived from the machine
  Session s(server.get());
  std::string info = s.Run({"INFO", "memory"});
  std::string limit = InfoField(info, "maxmemory");
  ASSERT_NE(limit, "0");
  EXPECT_EQ(s.Run({"CONFIG", "GET", "maxmemory"}), Arr(2) + Bulk("maxmemory") + Bulk(limit));
  EXPECT_EQ(s.Run({"CONFIG", "SET", "maxmemory", "10mb"}), kOk);
  EXPECT_EQ(InfoField(s.Run({"INFO", "memory"}), "maxmemory"), "10485760");
  EXPECT_EQ(s.Run({"CONFIG", "GET", "maxmemory"}),
            Arr(2) + Bulk("maxmemory") + Bulk("10485760"));
}

TEST(InstantaneousRates, AreTheMeanOfTheLastSixteenSamples) {
  InstantaneousMetrics metrics;
  // 100 ms apart: 10 ops each = 100 ops/s; input 1024 bytes each = 10 KB/s.
  for (int i = 0; i <= 16; ++i) {
    metrics.Sample(i * 100, {uint64_t(i) * 10, uint64_t(i) * 1024, 0});
  }
  EXPECT_DOUBLE_EQ(metrics.PerSecond(InstantaneousMetrics::kOps), 100.0);
  EXPECT_DOUBLE_EQ(metrics.PerSecond(InstantaneousMetrics::kNetInput), 10240.0);
  EXPECT_DOUBLE_EQ(metrics.PerSecond(InstantaneousMetrics::kNetOutput), 0.0);
  // A reset total (CONFIG RESETSTAT) is no negative rate.
  metrics.Sample(1800, {0, 0, 0});
  EXPECT_GE(metrics.PerSecond(InstantaneousMetrics::kOps), 0.0);
}

TEST(Loglevel, RedisNamesAreAccepted) {
  auto server = MakeServer();
  Session s(server.get());
  for (const char* level : {"debug", "verbose", "notice", "warning", "nothing", "info"}) {
    EXPECT_EQ(s.Run({"CONFIG", "SET", "loglevel", level}), kOk) << level;
    EXPECT_EQ(s.Run({"CONFIG", "GET", "loglevel"}), Arr(2) + Bulk("loglevel") + Bulk(level));
  }
  EXPECT_EQ(s.Run({"CONFIG", "SET", "loglevel", "loud"}).rfind("-ERR CONFIG SET failed", 0), 0u);
}

}  // namespace
}  // namespace bloomgate

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

TEST(ClientKill, FiltersAreCheckedWithRedisTexts) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "1.2.3.4:5"}), Err("ERR No such client"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "ID", "0"}), Err("ERR client-id should be greater than 0"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "ID", "x"}), Err("ERR client-id should be greater than 0"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "TYPE", "odd"}), Err("ERR Unknown client type 'odd'"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "USER", "bob"}), Err("ERR No such user 'bob'"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "SKIPME", "maybe"}), Err("ERR syntax error"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "MAXAGE", "x"}),
            Err("ERR value is not an integer or out of range"));
  // Three words are the old ip:port form, as in Redis.
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "ID"}), Err("ERR No such client"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "ID", "1", "ADDR"}), Err("ERR syntax error"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "NOPE", "1"}), Err("ERR syntax error"));
  EXPECT_EQ(s.Run({"CLIENT", "KILL"}), WrongArity("client|kill"));
}

TEST(ClientKill, KillsTheMatchingRegisteredClientsOnly) {
  auto server = MakeServer();
  Session s(server.get());
  auto a = server->clients.Register("10.0.0.1:1000", "127.0.0.1:6379", NowMs());
  auto b = server->clients.Register("10.0.0.2:2000", "127.0.0.1:6380", NowMs());
  int a_killed = 0, b_killed = 0;
  a->set_close_hook([&] { ++a_killed; });
  b->set_close_hook([&] { ++b_killed; });
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "TYPE", "pubsub"}), Int(0));
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "LADDR", "127.0.0.1:6380", "USER", "default"}), Int(1));
  EXPECT_EQ(b_killed, 1);
  EXPECT_EQ(a_killed, 0);
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "ADDR", "10.0.0.2:2000"}), Int(0));  // already killed
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "MAXAGE", "1000"}), Int(0));         // too young
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "10.0.0.1:1000"}), kOk);
  EXPECT_EQ(a_killed, 1);
}

TEST(ClientKill, UserMatchesTheAclUserAClientIsAuthenticatedAs) {
  auto server = MakeServer();
  Session s(server.get());
  ASSERT_EQ(s.Run({"ACL", "SETUSER", "edge", "on", ">pw", "+@all", "~*"}), kOk);
  auto a = server->clients.Register("10.0.0.1:1000", "127.0.0.1:6379", NowMs());
  auto b = server->clients.Register("10.0.0.2:2000", "127.0.0.1:6379", NowMs());
  b->set_user("edge");
  int a_killed = 0, b_killed = 0;
  a->set_close_hook([&] { ++a_killed; });
  b->set_close_hook([&] { ++b_killed; });
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "USER", "edge"}), Int(1));
  EXPECT_EQ(b_killed, 1);
  EXPECT_EQ(a_killed, 0);
  EXPECT_EQ(s.Run({"CLIENT", "KILL", "USER", "Edge"}), Err("ERR No such user 'Edge'"));
}

TEST(ClientNoEvict, IsShownInClientListFlags) {
  auto server = MakeServer();
  Session s(server.get());
  s.client().info = server->clients.Register("10.0.0.1:1000", "127.0.0.1:6379", NowMs());
  EXPECT_EQ(s.Run({"CLIENT", "NO-EVICT", "on"}), kOk);
  EXPECT_NE(s.Run({"CLIENT", "INFO"}).find(" flags=e "), std::string::npos);
  EXPECT_EQ(s.Run({"CLIENT", "NO-EVICT", "off"}), kOk);
  EXPECT_NE(s.Run({"CLIENT", "INFO"}).find(" flags=N "), std::string::npos);
  EXPECT_EQ(s.Run({"CLIENT", "NO-EVICT", "maybe"}), Err("ERR syntax error"));
}

// The flags= field of client `id`'s line in a CLIENT LIST reply ("" if absent).
std::string FlagsOf(const std::string& list, uint64_t id) {
  size_t at = list.find("id=" + std::to_string(id) + " ");
  if (at == std::string::npos) return "";
  at = list.find(" flags=", at) + 7;
  return list.substr(at, list.find(' ', at) - at);
}

// The multi= field of client `id`'s line.
std::string MultiOf(const std::string& list, uint64_t id) {
  size_t at = list.find("id=" + std::to_string(id) + " ");
  if (at == std::string::npos) return "";
  at = list.find(" multi=", at) + 7;
  return list.substr(at, list.find(' ', at) - at);
}

TEST(ClientFlags, AreRedisLettersInRedisOrderAndNWhenNone) {
  EXPECT_EQ(ClientFlagsText({}), "N");
  EXPECT_EQ(ClientFlagsText({.monitor = true, .multi = true, .blocked = true,
                             .dirty_watch = true, .close_after_reply = true,
                             .no_evict = true}),
            "Oxbdce");
  EXPECT_EQ(ClientFlagsText({.monitor = true}), "O");
  EXPECT_EQ(ClientFlagsText({.multi = true, .dirty_watch = true}), "xd");
}

TEST(ClientFlags, AMonitorShowsOUntilReset) {
  auto server = MakeServer();
  Session monitor(server.get()), other(server.get(), 1);
  monitor.client().info = server->clients.Register("10.0.0.1:1000", "127.0.0.1:6379", NowMs());
  other.client().info = server->clients.Register("10.0.0.2:2000", "127.0.0.1:6379", NowMs());
  const uint64_t id = monitor.client().info->id;
  EXPECT_EQ(FlagsOf(other.Run({"CLIENT", "LIST"}), id), "N");
  ASSERT_EQ(monitor.Run({"MONITOR"}), kOk);
  EXPECT_EQ(FlagsOf(other.Run({"CLIENT", "LIST"}), id), "O");
  ASSERT_EQ(monitor.Run({"RESET"}), Simple("RESET"));
  EXPECT_EQ(FlagsOf(other.Run({"CLIENT", "LIST"}), id), "N");
}

TEST(ClientFlags, MultiShowsXAndTheQueuedCount) {
  auto server = MakeServer();
  Session s(server.get());
  s.client().info = server->clients.Register("10.0.0.1:1000", "127.0.0.1:6379", NowMs());
  const uint64_t id = s.client().info->id;
  EXPECT_EQ(MultiOf(s.Run({"CLIENT", "INFO"}), id), "-1");
  ASSERT_EQ(s.Run({"MULTI"}), kOk);
  ASSERT_EQ(s.Run({"BF.ADD", "k", "a"}), Simple("QUEUED"));
  ASSERT_EQ(s.Run({"BF.ADD", "k", "b"}), Simple("QUEUED"));
  // CLIENT INFO is queued too inside MULTI: look from another client.
  Session other(server.get(), 1);
  std::string list = other.Run({"CLIENT", "LIST"});
  EXPECT_EQ(FlagsOf(list, id), "x") << list;
  EXPECT_EQ(MultiOf(list, id), "2") << list;
  s.Run({"EXEC"});
  list = other.Run({"CLIENT", "LIST"});
  EXPECT_EQ(FlagsOf(list, id), "N") << list;
  EXPECT_EQ(MultiOf(list, id), "-1") << list;
}

TEST(ClientFlags, AChangedWatchedKeyShowsDUntilExecOrUnwatch) {
  auto server = MakeServer();
  Session watcher(server.get()), writer(server.get(), 1);
  watcher.client().info = server->clients.Register("10.0.0.1:1000", "127.0.0.1:6379", NowMs());
  const uint64_t id = watcher.client().info->id;
  ASSERT_EQ(writer.Run({"BF.ADD", "k", "a"}), Int(1));
  ASSERT_EQ(watcher.Run({"WATCH", "k", "missing"}), kOk);
  EXPECT_EQ(FlagsOf(writer.Run({"CLIENT", "LIST"}), id), "N");
  ASSERT_EQ(writer.Run({"BF.ADD", "k", "b"}), Int(1));
  EXPECT_EQ(FlagsOf(writer.Run({"CLIENT", "LIST"}), id), "d");
  EXPECT_EQ(FlagsOf(watcher.Run({"CLIENT", "INFO"}), id), "d");
  ASSERT_EQ(watcher.Run({"UNWATCH"}), kOk);
  EXPECT_EQ(FlagsOf(writer.Run({"CLIENT", "LIST"}), id), "N");

  // A key missing at WATCH and created since; then MULTI: both flags; EXEC
  // (aborted) ends both.
  ASSERT_EQ(watcher.Run({"WATCH", "missing"}), kOk);
  ASSERT_EQ(writer.Run({"BF.ADD", "missing", "a"}), Int(1));
  ASSERT_EQ(watcher.Run({"MULTI"}), kOk);
  EXPECT_EQ(FlagsOf(writer.Run({"CLIENT", "LIST"}), id), "xd");
  ASSERT_EQ(watcher.Run({"EXEC"}), kNilArray);
  EXPECT_EQ(FlagsOf(writer.Run({"CLIENT", "LIST"}), id), "N");
}

// A non-scaling Bloom filter made for 100 items at 1% holding 2,000: what
// a log replayed after a lowered limit leaves (ReplayAdd never refuses an
// acknowledged item; it goes in past the capacity).
EntryPtr OverfullBloomEntry() {
  ScalableBloomOptions options;
  options.capacity = 100;
  options.error_rate = 0.01;
  options.expansion = 0;  // NONSCALING
  options.hash_seed = 7;
  std::unique_ptr<ScalableBloomFilter> filter;
  EXPECT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  for (int i = 0; i < 2000; ++i) {
    filter->ReplayAdd(filter->Hash("item-" + std::to_string(i)), /*counted=*/true);
  }
  return std::make_shared<KeyEntry>(std::move(filter));
}

TEST(MemoryDoctor, NamesTheFilterOverItsFalsePositiveTargetAndTheOneOverCapacity) {
  auto server = MakeServer();
  Session s(server.get());
  ASSERT_EQ(s.Run({"BF.ADD", "healthy", "a"}), Int(1));
  server->keyspace.Put("overfull", OverfullBloomEntry(), /*expire_at_ms=*/0);
  const std::string text = s.Run({"MEMORY", "DOCTOR"});
  EXPECT_EQ(text.find("No memory problem found"), std::string::npos) << text;
  // 2,000 items in bits sized for 100 set nearly every bit: the estimate is
  // near 1, far past 1.25 x 0.01.
  EXPECT_NE(text.find("* 1 filter(s) answer with more false positives than they were created "
                      "for: the worst, 'overfull', has an estimated false-positive rate of "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" against its 0.01. Rebuild it with a larger capacity"), std::string::npos)
      << text;
  EXPECT_NE(text.find("* 1 non-scaling filter(s) hold more items than their capacity."),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("'healthy'"), std::string::npos) << text;
}

TEST(LatencyHistogram, EveryValueLandsInABucketAtMostOneSixteenthWide) {
  for (uint64_t v = 0; v < (uint64_t{1} << 36); v = v < 64 ? v + 1 : v + v / 7 + 1) {
    const size_t index = LatencyHistogram::IndexOf(v);
    ASSERT_LT(index, LatencyHistogram::kBuckets) << v;
    const uint64_t high = LatencyHistogram::HighestOf(index);
    const uint64_t low = index == 0 ? 0 : LatencyHistogram::HighestOf(index - 1) + 1;
    ASSERT_LE(low, v) << "bucket " << index;
    ASSERT_GE(high, v) << "bucket " << index;
    ASSERT_LE(static_cast<double>(high - low + 1), std::max(1.0, static_cast<double>(low) / 16))
        << "bucket " << index << " holds " << low << ".." << high;
  }
  // 68.7 s and beyond share the last bucket.
  EXPECT_EQ(LatencyHistogram::IndexOf(uint64_t{1} << 40), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogram, PercentilesAreTheTopOfTheBucketWhereTheCountIsReached) {
  // 1,000 calls of 1..1000 us: p50 is the 500th value, 500 us, reported as
  // the top of its bucket (within 1/16 above); p100 the largest.
  LatencyCounts counts;
  for (uint64_t us = 1; us <= 1000; ++us) {
    ++counts.counts[LatencyHistogram::IndexOf(us * 1000)];
    ++counts.total;
  }
  for (double p : {50.0, 99.0, 99.9, 100.0}) {
    const double exact = p / 100 * 1000 * 1000;  // ns
    const double got = static_cast<double>(counts.ValueAtPercentile(p));
    EXPECT_GE(got, exact) << p;
    EXPECT_LE(got, exact * (1 + 1.0 / 16)) << p;
  }
  EXPECT_EQ(LatencyCounts{}.ValueAtPercentile(50), 0u);
}

TEST(LatencyStats, InfoShowsEachCalledCommandsPercentilesUntilResetStat) {
  auto server = MakeServer();
  Session s(server.get());
  for (int i = 0; i < 10; ++i) s.Run({"PING"});
  s.Run({"CONFIG", "GET", "port"});
  std::string info = s.Run({"INFO", "latencystats"});
  EXPECT_NE(info.find("# Latencystats\r\n"), std::string::npos) << info;
  const std::regex line(R"(latency_percentiles_usec_ping:p50=\d+\.\d{3},p99=\d+\.\d{3},)"
                        R"(p99\.9=\d+\.\d{3}\r\n)");
  EXPECT_TRUE(std::regex_search(info, line)) << info;
  EXPECT_NE(info.find("latency_percentiles_usec_config|get:"), std::string::npos) << info;
  EXPECT_EQ(info.find("latency_percentiles_usec_bf.add"), std::string::npos) << info;
  EXPECT_EQ(s.Run({"CONFIG", "RESETSTAT"}), kOk);
  info = s.Run({"INFO", "latencystats"});
  EXPECT_EQ(info.find("latency_percentiles_usec_ping:"), std::string::npos) << info;
  EXPECT_EQ(s.Run({"CONFIG", "SET", "latency-tracking", "no"}), kOk);
  s.Run({"PING"});
  info = s.Run({"INFO", "latencystats"});
  EXPECT_EQ(info.find("latency_percentiles_usec_"), std::string::npos) << info;
}

TEST(ContainerHelp, ListsEverySubcommandOfTheTableAndNothingElse) {
  auto server = MakeServer();
  // CLUSTER HELP answers only with the cluster on, as in Redis.
  server->cluster.Enable(FreshView(7000, 17000, ""), nullptr);
  Session s(server.get());
  for (const CommandSpec& spec : server->commands.commands()) {
    if (spec.subcommands.empty()) continue;
    SCOPED_TRACE(spec.name);
    const CommandSpec* help = CommandTable::FindSubcommand(spec, "help");
    ASSERT_NE(help, nullptr) << spec.name << " has no HELP";
    std::string upper(spec.name);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    const std::string reply = s.Run({upper, "HELP"});
    EXPECT_NE(reply.find("+" + upper + " <subcommand> [<arg> [value] [opt] ...]. Subcommands "
                         "are:\r\n"),
              std::string::npos)
        << reply;
    for (const CommandSpec& sub : spec.subcommands) {
      std::string name(sub.name);
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      // A subcommand's line starts with its name, alone or before its syntax.
      const bool listed = reply.find("+" + name + "\r\n") != std::string::npos ||
                          reply.find("+" + name + " ") != std::string::npos;
      EXPECT_TRUE(listed) << upper << " HELP does not list " << name << ": " << reply;
    }
  }
}

TEST(DashboardConfig, DatabasesIsOneAndMaxmemoryPolicyNoeviction) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"CONFIG", "GET", "databases"}), Arr(2) + Bulk("databases") + Bulk("1"));
  EXPECT_EQ(s.Run({"CONFIG", "GET", "maxmemory-policy"}),
            Arr(2) + Bulk("maxmemory-policy") + Bulk("noeviction"));
  EXPECT_EQ(s.Run({"CONFIG", "SET", "maxmemory-policy", "volatile-lru"}),
            "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - "
            "argument must be 'noeviction': filters are never evicted, a write past maxmemory "
            "is refused with -OOM\r\n");
}

TEST(MemoryDoctor, JudgesTheFiltersPeakAgainstTheFiltersNotTheStartUpOverhead) {
  auto server = MakeServer();
  // What a fresh server's resident set is; a test process's varies.
  server->startup_resident_bytes = 8 << 20;
  Session s(server.get());
  // ~1.03 MB each (measured), under the lazy freer's 1 MiB: DEL frees them at once.
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(s.Run({"BF.RESERVE", "k" + std::to_string(i), "0.01", "700000"}), kOk);
  }
  const uint64_t peak = server->budget.used();
  ASSERT_GT(peak, 3u << 20);
  ASSERT_LT(peak, 4u << 20);
  // No peak finding while the filters are all there. (Not "No memory problem
  // found": the fragmentation finding reads this test process's resident set,
  // 54 MiB under ThreadSanitizer.)
  std::string text = s.Run({"MEMORY", "DOCTOR"});
  EXPECT_EQ(text.find("Peak memory"), std::string::npos) << text;
  ASSERT_EQ(s.Run({"DEL", "k0", "k1", "k2", "k3"}), Int(4));
  ASSERT_EQ(server->budget.used(), 0u);
  // The filters went from 3.9 MiB to none. Counted with the 8 MiB start-up
  // set on both sides that is 11.9 against 8 MiB, under the 1.5 ratio.
  text = s.Run({"MEMORY", "DOCTOR"});
  EXPECT_NE(text.find("* Peak memory: the filters' peak was 3.9 MiB"), std::string::npos)
      << text;
  EXPECT_NE(text.find(" MiB and they hold none now"), std::string::npos) << text;
}

TEST(Reset, DropsTheTransactionProtocolNameAndAuthentication) {
  ServerConfig config;
  config.requirepass = "pw";
  auto server = MakeServer(config);
  Session s(server.get());
  s.client().info = server->clients.Register("10.0.0.1:1000", "127.0.0.1:6379", NowMs());
  s.Run({"CLIENT", "SETNAME", "me"});
  s.set_resp3(true);
  EXPECT_EQ(s.Run({"MULTI"}), kOk);
  EXPECT_EQ(s.Run({"RESET"}), Simple("RESET"));
  EXPECT_FALSE(s.client().in_multi);
  EXPECT_FALSE(s.client().resp3);
  EXPECT_EQ(s.client().info->name(), "");
  EXPECT_EQ(s.Run({"PING"}), Err("NOAUTH Authentication required."));
}

TEST(Reset, GoesBackToTheDefaultAclUser) {
  auto server = MakeServer();
  Session s(server.get());
  s.client().info = server->clients.Register("10.0.0.1:1000", "127.0.0.1:6379", NowMs());
  ASSERT_EQ(s.Run({"ACL", "SETUSER", "edge", "on", ">pw", "+@all", "~*"}), kOk);
  ASSERT_EQ(s.Run({"AUTH", "edge", "pw"}), kOk);
  EXPECT_EQ(s.Run({"ACL", "WHOAMI"}), Bulk("edge"));
  EXPECT_EQ(s.Run({"RESET"}), Simple("RESET"));
  // "default" is on and nopass here, so the connection stays authenticated.
  EXPECT_TRUE(s.client().authenticated);
  EXPECT_EQ(s.Run({"ACL", "WHOAMI"}), Bulk("default"));
  EXPECT_EQ(s.client().info->user(), "default");
  // With a password on "default", RESET leaves the connection unauthenticated.
  ASSERT_EQ(s.Run({"AUTH", "edge", "pw"}), kOk);
  ASSERT_EQ(s.Run({"ACL", "SETUSER", "default", "resetpass", ">pw2"}), kOk);
  EXPECT_EQ(s.Run({"RESET"}), Simple("RESET"));
  EXPECT_FALSE(s.client().authenticated);
  EXPECT_EQ(s.Run({"PING"}), Err("NOAUTH Authentication required."));
}

TEST(Reset, ADeletedUsersConnectionClosesInsteadOfBecomingDefault) {
  auto server = MakeServer();
  Session admin(server.get());
  Session s(server.get());
  ASSERT_EQ(admin.Run({"ACL", "SETUSER", "edge", "on", ">pw", "+@all", "~*"}), kOk);
  ASSERT_EQ(s.Run({"AUTH", "edge", "pw"}), kOk);
  ASSERT_EQ(admin.Run({"ACL", "DELUSER", "edge"}), Int(1));
  EXPECT_EQ(s.Run({"RESET"}), Simple("RESET"));
  EXPECT_TRUE(s.client().close_after_reply);
}

TEST(ShutdownAbort, ThereIsNeverAShutdownToAbort) {
  auto server = MakeServer();
  bool stopped = false;
  server->request_shutdown = [&] { stopped = true; };
  Session s(server.get());
  EXPECT_EQ(s.Run({"SHUTDOWN", "ABORT"}), Err("ERR No shutdown in progress."));
  EXPECT_EQ(s.Run({"SHUTDOWN", "NOSAVE", "ABORT"}), Err("ERR syntax error"));
  EXPECT_FALSE(stopped);
}

}  // namespace
}  // namespace bloomgate

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

TEST(RandomKey, ReturnsAnExistingKeyOrNil) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"RANDOMKEY"}), kNil);
  s.Run({"BF.ADD", "a", "x"});
  s.Run({"BF.ADD", "b", "x"});
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) seen.insert(s.Run({"RANDOMKEY"}));
  // 200 draws from two keys miss one of them with probability 2^-199.
  EXPECT_EQ(seen, (std::set<std::string>{Bulk("a"), Bulk("b")}));
}

TEST(Touch, CountsTheKeysThatExist) {
  auto server = MakeServer();
  Session s(server.get());
  s.Run({"BF.ADD", "a", "x"});
  EXPECT_EQ(s.Run({"TOUCH", "a", "nosuch", "a"}), Int(2));
}

TEST(Object, AnswersAsRedisForAModuleValue) {
  auto server = MakeServer();
  Session s(server.get());
  EXPECT_EQ(s.Run({"OBJECT", "ENCODING", "nosuch"}), kNil);
  s.Run({"BF.ADD", "a", "x"});
  EXPECT_EQ(s.Run({"OBJECT", "ENCODING", "a"}), Bulk("raw"));
  EXPECT_EQ(s.Run({"OBJECT", "REFCOUNT", "a"}), Int(1));
  EXPECT_EQ(s.Run({"OBJECT", "FREQ", "a"}).rfind("-ERR An LFU maxmemory policy is not selected",
                                                 0),
            0u);
  EXPECT_EQ(s.Run({"OBJECT", "FREQ", "nosuch"}), kNil);
  EXPECT_EQ(s.Run({"OBJECT", "HELP"}).rfind(Arr(15) + "+OBJECT <subcommand>", 0), 0u);
  EXPECT_EQ(s.Run({"OBJECT", "IDLETIME", "a"}), Int(0));
  EXPECT_EQ(s.Run({"OBJECT", "IDLETIME", "nosuch"}), kNil);
}

}  // namespace
}  // namespace bloomgate
