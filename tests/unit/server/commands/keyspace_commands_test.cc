// Generic key commands with Redis's replies and texts: EXPIRE family, TTL,
// PERSIST, TYPE, EXISTS, DEL, RENAME, KEYS, SCAN, MEMORY USAGE, FLUSHALL.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "server/commands/errors.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;

class KeyspaceCommands : public ::testing::Test {
 protected:
  KeyspaceCommands() : server_(MakeServer()), s_(server_.get()) {}

  std::string Run(const Args& args) { return s_.Run(args); }
  void Create(std::string_view key) { ASSERT_EQ(Run({"BF.ADD", std::string(key), "x"}), Int(1)); }
  int64_t Integer(const Args& args) {
    std::string reply = Run(args);
    EXPECT_EQ(reply.front(), ':') << reply;
    return reply.front() == ':' ? std::stoll(reply.substr(1)) : INT64_MIN;
  }
  int64_t DeadlineOf(std::string_view key) {
    EntryPtr entry = server_->keyspace.Find(key, NowMs());
    return entry == nullptr ? -2 : entry->expire_at_ms();
  }

  std::unique_ptr<ServerContext> server_;
  Session s_;
};

// Splits a SCAN reply into its cursor and keys.
struct ScanReply {
  std::string cursor;
  std::vector<std::string> keys;
  bool ok = false;
};

ScanReply ParseScan(const std::string& reply) {
  ScanReply parsed;
  size_t pos = 0;
  auto line = [&]() -> std::string {
    size_t end = reply.find("\r\n", pos);
    if (end == std::string::npos) return {};
    std::string text = reply.substr(pos, end - pos);
    pos = end + 2;
    return text;
  };
  if (line() != "*2") return parsed;
  std::string len = line();
  if (len.empty() || len[0] != '$') return parsed;
  parsed.cursor = line();
  std::string count = line();
  if (count.empty() || count[0] != '*') return parsed;
  for (int i = 0, n = std::stoi(count.substr(1)); i < n; ++i) {
    std::string bulk = line();
    if (bulk.empty() || bulk[0] != '$') return parsed;
    size_t size = std::stoul(bulk.substr(1));
    parsed.keys.push_back(reply.substr(pos, size));
    pos += size + 2;
  }
  parsed.ok = pos == reply.size();
  return parsed;
}

// ------------------------------------------------------------- EXPIRE ---

TEST_F(KeyspaceCommands, ExpireSetsATtlOnAnExistingKey) {
  Create("k");
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(100));
  int64_t pttl = Integer({"PTTL", "k"});
  EXPECT_GT(pttl, 99'000);
  EXPECT_LE(pttl, 100'000);
}

TEST_F(KeyspaceCommands, ExpireOnAMissingKeyIsZero) {
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(0));
  EXPECT_EQ(Run({"PEXPIRE", "k", "100"}), Int(0));
  EXPECT_EQ(Run({"EXPIREAT", "k", "99999999999"}), Int(0));
  EXPECT_EQ(Run({"PEXPIREAT", "k", "99999999999999"}), Int(0));
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
}

TEST_F(KeyspaceCommands, TtlAndPttlOfAMissingKeyAreMinusTwo) {
  EXPECT_EQ(Run({"TTL", "k"}), Int(-2));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(-2));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(-2));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(-2));
}

TEST_F(KeyspaceCommands, TtlAndPttlOfAPersistentKeyAreMinusOne) {
  Create("k");
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"PTTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(-1));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(-1));
}

TEST_F(KeyspaceCommands, PexpireAndTheAbsoluteFormsSetTheSameDeadline) {
  Create("a");
  Create("b");
  Create("c");
  EXPECT_EQ(Run({"PEXPIRE", "a", "50000"}), Int(1));
  int64_t a = DeadlineOf("a");
  EXPECT_GT(a, NowMs() + 49'000);
  EXPECT_EQ(Run({"PEXPIREAT", "b", std::to_string(a)}), Int(1));
  EXPECT_EQ(DeadlineOf("b"), a);
  const int64_t at_seconds = NowMs() / 1000 + 3600;
  EXPECT_EQ(Run({"EXPIREAT", "c", std::to_string(at_seconds)}), Int(1));
  EXPECT_EQ(DeadlineOf("c"), at_seconds * 1000);
  EXPECT_EQ(Run({"EXPIRETIME", "c"}), Int(at_seconds));
  EXPECT_EQ(Run({"PEXPIRETIME", "c"}), Int(at_seconds * 1000));
  EXPECT_EQ(Run({"PEXPIRETIME", "b"}), Int(a));
}

TEST_F(KeyspaceCommands, ANonPositiveOrPastExpireDeletesTheKey) {
  Create("a");
  Create("b");
  Create("c");
  Create("d");
  EXPECT_EQ(Run({"EXPIRE", "a", "-1"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "b", "0"}), Int(1));
  EXPECT_EQ(Run({"PEXPIREAT", "c", "1"}), Int(1));
  EXPECT_EQ(Run({"EXPIREAT", "d", "-100"}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "a", "b", "c", "d"}), Int(0));
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
  EXPECT_EQ(Run({"TTL", "a"}), Int(-2));
}

TEST_F(KeyspaceCommands, ExpireNxSetsOnlyWhenThereIsNoTtl) {
  Create("k");
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "NX"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "nx"}), Int(0));
  EXPECT_EQ(Run({"TTL", "k"}), Int(100));
}

TEST_F(KeyspaceCommands, ExpireXxSetsOnlyWhenThereIsATtl) {
  Create("k");
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "XX"}), Int(0));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "XX"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(200));
}

TEST_F(KeyspaceCommands, ExpireGtOnlyLengthensAndTreatsNoTtlAsInfinite) {
  Create("k");
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "GT"}), Int(0));  // nothing exceeds "forever"
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "k", "50", "GT"}), Int(0));
  EXPECT_EQ(Run({"PEXPIREAT", "k", std::to_string(DeadlineOf("k")), "GT"}), Int(0));  // equal
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "GT"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(200));
}

TEST_F(KeyspaceCommands, ExpireLtOnlyShortensAndTreatsNoTtlAsInfinite) {
  Create("k");
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "LT"}), Int(1));  // anything is below "forever"
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "LT"}), Int(0));
  EXPECT_EQ(Run({"PEXPIREAT", "k", std::to_string(DeadlineOf("k")), "LT"}), Int(0));  // equal
  EXPECT_EQ(Run({"EXPIRE", "k", "50", "LT"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(50));
}

TEST_F(KeyspaceCommands, ExpireXxGtCombineAsRedisAllows) {
  Create("k");
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "XX", "GT"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "k", "200", "XX", "GT"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "k", "300", "LT", "XX"}), Int(0));
}

TEST_F(KeyspaceCommands, ExpireConditionIsCheckedBeforeAPastTimeDeletes) {
  Create("k");
  EXPECT_EQ(Run({"EXPIRE", "k", "-1", "XX"}), Int(0));  // no TTL: XX refuses, key stays
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "k", "-1", "LT"}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
}

TEST_F(KeyspaceCommands, ExpireRefusesIncompatibleOptions) {
  Create("k");
  const std::string nx_conflict =
      Err("ERR NX and XX, GT or LT options at the same time are not compatible");
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "NX", "XX"}), nx_conflict);
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "NX", "GT"}), nx_conflict);
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "LT", "NX"}), nx_conflict);
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "GT", "LT"}),
            Err("ERR GT and LT options at the same time are not compatible"));
  EXPECT_EQ(Run({"EXPIRE", "k", "100", "FOO"}), Err("ERR Unsupported option FOO"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
}

TEST_F(KeyspaceCommands, ExpireRefusesANonInteger) {
  Create("k");
  for (const char* amount : {"abc", "1.5", "", " 1", "1 ", "99999999999999999999"}) {
    EXPECT_EQ(Run({"EXPIRE", "k", amount}), Err("ERR value is not an integer or out of range"))
        << amount;
  }
}

TEST_F(KeyspaceCommands, ExpireRefusesATimeThatOverflowsWithRedisText) {
  Create("k");
  EXPECT_EQ(Run({"EXPIRE", "k", "9223372036854775807"}),
            Err("ERR invalid expire time in 'expire' command"));
  EXPECT_EQ(Run({"EXPIRE", "k", "-9223372036854775808"}),
            Err("ERR invalid expire time in 'expire' command"));
  EXPECT_EQ(Run({"EXPIRE", "k", "9223372036854776"}),
            Err("ERR invalid expire time in 'expire' command"));
  EXPECT_EQ(Run({"PEXPIRE", "k", "9223372036854775807"}),
            Err("ERR invalid expire time in 'pexpire' command"));
  EXPECT_EQ(Run({"EXPIREAT", "k", "9223372036854775807"}),
            Err("ERR invalid expire time in 'expireat' command"));
  // The name is the command's, in lower case, whatever case the client used.
  EXPECT_EQ(Run({"ExPiRe", "k", "9223372036854775807"}),
            Err("ERR invalid expire time in 'expire' command"));
  // Checked before the key is looked up.
  EXPECT_EQ(Run({"EXPIRE", "missing", "9223372036854775807"}),
            Err("ERR invalid expire time in 'expire' command"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
}

TEST_F(KeyspaceCommands, TheLargestRepresentableDeadlineIsAccepted) {
  Create("k");
  EXPECT_EQ(Run({"PEXPIREAT", "k", "9223372036854775807"}), Int(1));
  EXPECT_EQ(Run({"PEXPIRETIME", "k"}), Int(9223372036854775807));
  EXPECT_EQ(Run({"EXPIREAT", "k", "9223372036854775"}), Int(1));
  EXPECT_EQ(Run({"EXPIRETIME", "k"}), Int(9223372036854775));
}

TEST_F(KeyspaceCommands, ExpireArityNeedsKeyAndTime) {
  EXPECT_EQ(Run({"EXPIRE", "k"}), WrongArity("expire"));
  EXPECT_EQ(Run({"PEXPIREAT", "k"}), WrongArity("pexpireat"));
}

TEST_F(KeyspaceCommands, TtlRoundsToTheNearestSecond) {
  Create("k");
  EXPECT_EQ(Run({"PEXPIRE", "k", "1600"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(2));
  EXPECT_EQ(Run({"PEXPIRE", "k", "1400"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(1));
}

TEST_F(KeyspaceCommands, AnExpiredKeyIsGoneForEveryCommand) {
  Create("k");
  ASSERT_TRUE(server_->keyspace.SetExpire("k", NowMs() - 1, NowMs() - 2));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(0));
  EXPECT_EQ(Run({"TYPE", "k"}), Simple("none"));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-2));
  EXPECT_EQ(Run({"BF.EXISTS", "k", "x"}), Int(0));
  EXPECT_EQ(Run({"BF.INFO", "k"}), Err("ERR not found"));
  EXPECT_EQ(Run({"KEYS", "*"}), Arr(0));
}

// ------------------------------------------------------------- PERSIST ---

TEST_F(KeyspaceCommands, PersistRemovesATtl) {
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(0));
  Create("k");
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(0));
  EXPECT_EQ(Run({"EXPIRE", "k", "100"}), Int(1));
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(1));
  EXPECT_EQ(Run({"TTL", "k"}), Int(-1));
  EXPECT_EQ(Run({"PERSIST", "k"}), Int(0));
  EXPECT_EQ(server_->keyspace.VolatileCount(), 0u);
}

// ------------------------------------------------ TYPE / EXISTS / DEL ---

TEST_F(KeyspaceCommands, TypeIsNoneOrTheRedisBloomTypeName) {
  EXPECT_EQ(Run({"TYPE", "k"}), Simple("none"));
  Create("k");
  EXPECT_EQ(Run({"TYPE", "k"}), Simple("MBbloom--"));
}

TEST_F(KeyspaceCommands, ExistsCountsEveryNamedKeyIncludingRepeats) {
  Create("a");
  Create("b");
  EXPECT_EQ(Run({"EXISTS", "a"}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "a", "a", "a"}), Int(3));
  EXPECT_EQ(Run({"EXISTS", "a", "b", "c", "b"}), Int(3));
  EXPECT_EQ(Run({"EXISTS", "c"}), Int(0));
  EXPECT_EQ(Run({"EXISTS"}), WrongArity("exists"));
}

TEST_F(KeyspaceCommands, DelCountsOnlyKeysItRemoved) {
  Create("a");
  Create("b");
  EXPECT_EQ(Run({"DEL", "a", "a", "c"}), Int(1));
  EXPECT_EQ(Run({"UNLINK", "b", "b"}), Int(1));
  EXPECT_EQ(Run({"DEL", "a"}), Int(0));
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
}

// -------------------------------------------------------------- RENAME ---

TEST_F(KeyspaceCommands, RenameMovesTheFilterAndItsTtl) {
  Create("src");
  EXPECT_EQ(Run({"EXPIRE", "src", "100"}), Int(1));
  EXPECT_EQ(Run({"RENAME", "src", "dst"}), kOk);
  EXPECT_EQ(Run({"EXISTS", "src"}), Int(0));
  EXPECT_EQ(Run({"BF.EXISTS", "dst", "x"}), Int(1));
  EXPECT_EQ(Run({"TTL", "dst"}), Int(100));
}

TEST_F(KeyspaceCommands, RenameOverwritesTheTarget) {
  EXPECT_EQ(Run({"BF.ADD", "src", "new"}), Int(1));
  EXPECT_EQ(Run({"BF.ADD", "dst", "old"}), Int(1));
  EXPECT_EQ(Run({"EXPIRE", "dst", "100"}), Int(1));
  EXPECT_EQ(Run({"RENAME", "src", "dst"}), kOk);
  EXPECT_EQ(Run({"BF.MEXISTS", "dst", "new", "old"}), Arr(2) + Int(1) + Int(0));
  EXPECT_EQ(Run({"TTL", "dst"}), Int(-1));  // the source had none
  EXPECT_EQ(Run({"DBSIZE"}), Int(1));
}

TEST_F(KeyspaceCommands, RenameOfAMissingKeyIsNoSuchKey) {
  EXPECT_EQ(Run({"RENAME", "src", "dst"}), Err("ERR no such key"));
  EXPECT_EQ(Run({"RENAMENX", "src", "dst"}), Err("ERR no such key"));
  EXPECT_EQ(Run({"RENAME", "src", "src"}), Err("ERR no such key"));
}

TEST_F(KeyspaceCommands, RenameToItselfIsOk) {
  Create("k");
  EXPECT_EQ(Run({"RENAME", "k", "k"}), kOk);
  EXPECT_EQ(Run({"RENAMENX", "k", "k"}), Int(0));
  EXPECT_EQ(Run({"EXISTS", "k"}), Int(1));
}

TEST_F(KeyspaceCommands, RenameNxLeavesAnExistingTargetAlone) {
  Create("src");
  Create("dst");
  EXPECT_EQ(Run({"RENAMENX", "src", "dst"}), Int(0));
  EXPECT_EQ(Run({"EXISTS", "src", "dst"}), Int(2));
  EXPECT_EQ(Run({"RENAMENX", "src", "free"}), Int(1));
  EXPECT_EQ(Run({"EXISTS", "src", "free"}), Int(1));
}

// ---------------------------------------------------------------- KEYS ---

TEST_F(KeyspaceCommands, KeysListsTheMatchingNames) {
  for (const char* key : {"user:1", "user:2", "item:1"}) Create(key);
  std::string reply = Run({"KEYS", "user:*"});
  EXPECT_TRUE(reply == Arr(2) + Bulk("user:1") + Bulk("user:2") ||
              reply == Arr(2) + Bulk("user:2") + Bulk("user:1"))
      << reply;
  EXPECT_EQ(Run({"KEYS", "item:?"}), Arr(1) + Bulk("item:1"));
  EXPECT_EQ(Run({"KEYS", "nomatch"}), Arr(0));
}

// ---------------------------------------------------------------- SCAN ---

TEST_F(KeyspaceCommands, ScanOfAnEmptyKeyspaceEndsAtOnce) {
  EXPECT_EQ(Run({"SCAN", "0"}), "*2\r\n$1\r\n0\r\n*0\r\n");
}

TEST_F(KeyspaceCommands, ScanIteratesEveryKeyOnceWithACursor) {
  std::set<std::string> created;
  for (int i = 0; i < 300; ++i) {
    created.insert("key:" + std::to_string(i));
    Create("key:" + std::to_string(i));
  }
  std::multiset<std::string> seen;
  std::string cursor = "0";
  int calls = 0;
  do {
    ScanReply reply = ParseScan(Run({"SCAN", cursor, "COUNT", "7"}));
    ASSERT_TRUE(reply.ok);
    seen.insert(reply.keys.begin(), reply.keys.end());
    cursor = reply.cursor;
    ASSERT_LT(++calls, 10'000);
  } while (cursor != "0");
  EXPECT_EQ(seen.size(), created.size());
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), created);
}

TEST_F(KeyspaceCommands, ScanMatchAndTypeFilterTheKeys) {
  for (int i = 0; i < 50; ++i) Create("a:" + std::to_string(i));
  for (int i = 0; i < 50; ++i) Create("b:" + std::to_string(i));
  std::set<std::string> seen;
  std::string cursor = "0";
  do {
    ScanReply reply = ParseScan(Run({"SCAN", cursor, "MATCH", "a:*", "COUNT", "10",
                                     "TYPE", "mbbloom--"}));
    ASSERT_TRUE(reply.ok);
    for (const std::string& key : reply.keys) EXPECT_EQ(key.rfind("a:", 0), 0u) << key;
    seen.insert(reply.keys.begin(), reply.keys.end());
    cursor = reply.cursor;
  } while (cursor != "0");
  EXPECT_EQ(seen.size(), 50u);

  cursor = "0";
  do {
    ScanReply reply = ParseScan(Run({"SCAN", cursor, "TYPE", "string"}));
    ASSERT_TRUE(reply.ok);
    EXPECT_TRUE(reply.keys.empty());
    cursor = reply.cursor;
  } while (cursor != "0");
}

TEST_F(KeyspaceCommands, ScanRefusesBadArguments) {
  EXPECT_EQ(Run({"SCAN", "abc"}), Err("ERR invalid cursor"));
  EXPECT_EQ(Run({"SCAN", "1.5"}), Err("ERR invalid cursor"));
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "abc"}),
            Err("ERR value is not an integer or out of range"));
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "0"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"SCAN", "0", "COUNT", "-1"}), Err("ERR syntax error"));  // Redis: count < 1
  EXPECT_EQ(Run({"SCAN", "0", "COUNT"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"SCAN", "0", "MATCH"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"SCAN", "0", "TYPE"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"SCAN", "0", "FOO", "bar"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"SCAN"}), WrongArity("scan"));
}

TEST_F(KeyspaceCommands, ScanAcceptsTheLargestCursor) {
  Create("k");
  ScanReply reply = ParseScan(Run({"SCAN", "18446744073709551615"}));
  ASSERT_TRUE(reply.ok);
  EXPECT_EQ(reply.cursor, "0");
}

// -------------------------------------------------------- MEMORY USAGE ---

TEST_F(KeyspaceCommands, MemoryUsageOfAMissingKeyIsNil) {
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k"}), kNil);
  s_.set_resp3(true);
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k"}), kNull3);
}

TEST_F(KeyspaceCommands, MemoryUsageCoversTheFilterAndItsName) {
  Create("k");
  EntryPtr entry = server_->keyspace.Find("k", NowMs());
  ASSERT_NE(entry, nullptr);
  const int64_t usage = Integer({"MEMORY", "USAGE", "k"});
  EXPECT_GE(usage, static_cast<int64_t>(entry->bloom()->memory_bytes()));
  EXPECT_EQ(usage, static_cast<int64_t>(entry->MemoryUsage()) + 1);
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES", "5"}), Int(usage));
  EXPECT_EQ(Run({"memory", "usage", "k", "samples", "0"}), Int(usage));
}

TEST_F(KeyspaceCommands, MemoryUsageGrowsWithTheFilter) {
  EXPECT_EQ(Run({"BF.RESERVE", "small", "0.01", "100"}), kOk);
  EXPECT_EQ(Run({"BF.RESERVE", "large", "0.01", "100000"}), kOk);
  EXPECT_GT(Integer({"MEMORY", "USAGE", "large"}), Integer({"MEMORY", "USAGE", "small"}) + 100000);
}

TEST_F(KeyspaceCommands, MemoryUsageRefusesBadOptions) {
  Create("k");
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "FOO", "5"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES", "x"}),
            Err("ERR value is not an integer or out of range"));
  EXPECT_EQ(Run({"MEMORY", "USAGE", "k", "SAMPLES", "5", "x"}), WrongArity("memory|usage"));
}

// ------------------------------------------------------------ FLUSHALL ---

TEST_F(KeyspaceCommands, FlushallRemovesEveryKeyAndItsMemory) {
  Create("a");
  Create("b");
  EXPECT_EQ(Run({"EXPIRE", "b", "100"}), Int(1));
  EXPECT_EQ(Run({"FLUSHALL"}), kOk);
  EXPECT_EQ(Run({"DBSIZE"}), Int(0));
  // Freed by the lazy freer, and FLUSHALL (SYNC) replies once it is done.
  EXPECT_EQ(server_->budget.used(), 0u);
  EXPECT_EQ(server_->keyspace.VolatileCount(), 0u);
  Create("c");
  EXPECT_EQ(Run({"FLUSHDB", "ASYNC"}), kOk);
  EXPECT_EQ(Run({"FLUSHALL", "sync"}), kOk);
  EXPECT_EQ(Run({"FLUSHALL", "LATER"}), Err("ERR syntax error"));
  EXPECT_EQ(Run({"FLUSHALL", "SYNC", "ASYNC"}), WrongArity("flushall"));
}

}  // namespace
}  // namespace bloomgate
