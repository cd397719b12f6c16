#include "server/access/acl_log.h"

#include <gtest/gtest.h>

namespace bloomgate {
namespace {

AclLogEntry Refusal(std::string reason, std::string object, std::string user = "u") {
  AclLogEntry entry;
  entry.reason = std::move(reason);
  entry.context = "toplevel";
  entry.object = std::move(object);
  entry.username = std::move(user);
  return entry;
}

TEST(AclLog, NewestFirstWithIdsAndTimes) {
  AclLog log;
  log.Add(Refusal("channel", "news"), 1000);
  log.Add(Refusal("key", "k"), 2000);
  auto entries = log.Latest(10);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].object, "k");
  EXPECT_EQ(entries[0].entry_id, 1u);
  EXPECT_EQ(entries[1].reason, "channel");
  EXPECT_EQ(entries[1].entry_id, 0u);
  EXPECT_EQ(entries[1].created_ms, 1000);
  EXPECT_EQ(log.Latest(1).size(), 1u);
}

TEST(AclLog, TheSameRefusalWithinAMinuteIsCountedOnItsEntryAndMovesFirst) {
  AclLog log;
  log.Add(Refusal("channel", "news"), 1000);
  log.Add(Refusal("key", "k"), 2000);
  log.Add(Refusal("channel", "news"), 30'000);
  auto entries = log.Latest(10);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].object, "news");
  EXPECT_EQ(entries[0].count, 2u);
  EXPECT_EQ(entries[0].created_ms, 1000);
  EXPECT_EQ(entries[0].updated_ms, 30'000);
  // Another user, or past the minute since the last one: a new entry.
  log.Add(Refusal("channel", "news", "v"), 31'000);
  log.Add(Refusal("channel", "news"), 30'000 + AclLog::kGroupingMs);
  EXPECT_EQ(log.Latest(10).size(), 4u);
}

TEST(AclLog, KeepsTheNewestEntriesAndResets) {
  AclLog log;
  for (size_t i = 0; i < AclLog::kMaxEntries + 5; ++i) {
    log.Add(Refusal("key", "k" + std::to_string(i)), static_cast<int64_t>(i));
  }
  auto entries = log.Latest(1000);
  ASSERT_EQ(entries.size(), AclLog::kMaxEntries);
  EXPECT_EQ(entries.front().object, "k" + std::to_string(AclLog::kMaxEntries + 4));
  EXPECT_EQ(entries.back().object, "k5");
  log.Reset();
  EXPECT_TRUE(log.Latest(10).empty());
}

// acllog-max-len: a smaller limit drops the oldest entries at once, a
// larger one lets the log grow again, 0 keeps nothing.
TEST(AclLog, MaxEntriesShrinksTheLogAtOnce) {
  AclLog log;
  for (int i = 0; i < 10; ++i) log.Add(Refusal("key", "k" + std::to_string(i)), i);
  log.SetMaxEntries(3);
  auto entries = log.Latest(1000);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries.front().object, "k9");
  EXPECT_EQ(entries.back().object, "k7");
  log.Add(Refusal("key", "k10"), 10);
  entries = log.Latest(1000);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries.back().object, "k8");
  log.SetMaxEntries(5);
  log.Add(Refusal("key", "k11"), 11);
  EXPECT_EQ(log.Latest(1000).size(), 4u);
  log.SetMaxEntries(0);
  log.Add(Refusal("key", "k12"), 12);
  EXPECT_TRUE(log.Latest(1000).empty());
}

}  // namespace
}  // namespace bloomgate
