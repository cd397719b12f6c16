#include "server/keyspace/keyspace.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../session.h"

namespace bloomgate {
namespace {

using bloomgate::testing::MakeBloomEntry;

constexpr int64_t kNow = 1'000'000;  // a fixed clock: expiry is decided by the now_ms passed in

EntryPtr Put(Keyspace& keyspace, std::string_view key, int64_t now = kNow) {
  bool inserted = false;
  EntryPtr entry = keyspace.Insert(key, MakeBloomEntry(), now, &inserted);
  EXPECT_TRUE(inserted) << key;
  return entry;
}

std::set<std::string> AllKeys(const Keyspace& keyspace, std::string_view pattern = "*",
                              int64_t now = kNow) {
  std::set<std::string> keys;
  keyspace.ForEachKey(pattern, now, [&](const std::string& name, const EntryPtr&) {
    EXPECT_TRUE(keys.insert(name).second) << "visited twice: " << name;
  });
  return keys;
}

// ------------------------------------------------------- find / insert ---

TEST(Keyspace, FindReturnsWhatInsertStored) {
  Keyspace keyspace;
  EXPECT_EQ(keyspace.Find("k", kNow), nullptr);
  EntryPtr entry = Put(keyspace, "k");
  EXPECT_EQ(keyspace.Find("k", kNow), entry);
  EXPECT_EQ(keyspace.Find("K", kNow), nullptr);  // names are case-sensitive
  EXPECT_EQ(keyspace.Size(), 1u);
}

TEST(Keyspace, InsertKeepsALiveEntryAndReturnsIt) {
  Keyspace keyspace;
  EntryPtr first = Put(keyspace, "k");
  bool inserted = true;
  EntryPtr again = keyspace.Insert("k", MakeBloomEntry(), kNow, &inserted);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(again, first);
  EXPECT_EQ(keyspace.Find("k", kNow), first);
}

TEST(Keyspace, NamesAreBinarySafe) {
  Keyspace keyspace;
  const std::string with_nul("a\0b", 3);
  EntryPtr entry = Put(keyspace, with_nul);
  EXPECT_EQ(keyspace.Find(with_nul, kNow), entry);
  EXPECT_EQ(keyspace.Find("a", kNow), nullptr);
  EntryPtr empty = Put(keyspace, "");
  EXPECT_EQ(keyspace.Find("", kNow), empty);
}

TEST(Keyspace, EraseRemovesOnlyTheNamedKey) {
  Keyspace keyspace;
  Put(keyspace, "a");
  Put(keyspace, "b");
  EXPECT_TRUE(keyspace.Erase("a", kNow));
  EXPECT_FALSE(keyspace.Erase("a", kNow));
  EXPECT_FALSE(keyspace.Erase("nosuch", kNow));
  EXPECT_EQ(keyspace.Find("a", kNow), nullptr);
  EXPECT_NE(keyspace.Find("b", kNow), nullptr);
  EXPECT_EQ(keyspace.Size(), 1u);
}

TEST(Keyspace, ARemovedEntryStaysUsableByWhoeverHoldsIt) {
  Keyspace keyspace;
  EntryPtr held = Put(keyspace, "k");
  bool added = false;
  ASSERT_EQ(held->bloom()->Add(HashKey("x"), &added), FilterStatus::kOk);
  ASSERT_TRUE(added);
  uint64_t version = held->version();
  ASSERT_TRUE(keyspace.Erase("k", kNow));
  EXPECT_NE(held->version(), version);  // WATCHers holding it see a change
  EXPECT_TRUE(held->bloom()->MayContain(HashKey("x")));
}

TEST(Keyspace, ClearRemovesEverythingAndBumpsVersions) {
  Keyspace keyspace;
  EntryPtr a = Put(keyspace, "a");
  Put(keyspace, "b");
  keyspace.SetExpire("b", kNow + 10, kNow);
  uint64_t version = a->version();
  keyspace.Clear();
  EXPECT_EQ(keyspace.Size(), 0u);
  EXPECT_EQ(keyspace.VolatileCount(), 0u);
  EXPECT_EQ(keyspace.Find("a", kNow), nullptr);
  EXPECT_NE(a->version(), version);
}

// ------------------------------------------------------------- rename ---

TEST(Keyspace, RenameMovesTheEntry) {
  Keyspace keyspace;
  EntryPtr entry = Put(keyspace, "src");
  EXPECT_EQ(keyspace.Rename("src", "dst", /*nx=*/false, kNow), Keyspace::RenameStatus::kOk);
  EXPECT_EQ(keyspace.Find("src", kNow), nullptr);
  EXPECT_EQ(keyspace.Find("dst", kNow), entry);
  EXPECT_EQ(keyspace.Size(), 1u);
}

TEST(Keyspace, RenameOfAMissingKeyIsNoSuchKey) {
  Keyspace keyspace;
  Put(keyspace, "dst");
  EXPECT_EQ(keyspace.Rename("src", "dst", false, kNow), Keyspace::RenameStatus::kNoSuchKey);
  EXPECT_EQ(keyspace.Rename("src", "dst", true, kNow), Keyspace::RenameStatus::kNoSuchKey);
  EXPECT_EQ(keyspace.Rename("src", "src", false, kNow), Keyspace::RenameStatus::kNoSuchKey);
  EXPECT_NE(keyspace.Find("dst", kNow), nullptr);
}

TEST(Keyspace, RenameReplacesTargetForEveryReader) {
  Keyspace keyspace;
  EntryPtr source = Put(keyspace, "src");
  EntryPtr old_target = Put(keyspace, "dst");
  uint64_t old_version = old_target->version();
  EXPECT_EQ(keyspace.Rename("src", "dst", false, kNow), Keyspace::RenameStatus::kOk);
  EXPECT_EQ(keyspace.Find("dst", kNow), source);
  EXPECT_EQ(keyspace.Size(), 1u);
  EXPECT_NE(old_target->version(), old_version);
}

TEST(Keyspace, RenameNxRefusesAnExistingTarget) {
  Keyspace keyspace;
  EntryPtr source = Put(keyspace, "src");
  EntryPtr target = Put(keyspace, "dst");
  EXPECT_EQ(keyspace.Rename("src", "dst", /*nx=*/true, kNow),
            Keyspace::RenameStatus::kTargetExists);
  EXPECT_EQ(keyspace.Find("src", kNow), source);
  EXPECT_EQ(keyspace.Find("dst", kNow), target);
}

TEST(Keyspace, RenameNxOverAnExpiredTargetSucceeds) {
  Keyspace keyspace;
  EntryPtr source = Put(keyspace, "src");
  Put(keyspace, "dst");
  ASSERT_TRUE(keyspace.SetExpire("dst", kNow + 5, kNow));
  EXPECT_EQ(keyspace.Rename("src", "dst", /*nx=*/true, kNow + 5), Keyspace::RenameStatus::kOk);
  EXPECT_EQ(keyspace.Find("dst", kNow + 5), source);
  EXPECT_EQ(keyspace.VolatileCount(), 0u);
}

TEST(Keyspace, RenameToItselfIsOkAndNxSaysTheTargetExists) {
  Keyspace keyspace;
  EntryPtr entry = Put(keyspace, "k");
  EXPECT_EQ(keyspace.Rename("k", "k", false, kNow), Keyspace::RenameStatus::kOk);
  EXPECT_EQ(keyspace.Rename("k", "k", true, kNow), Keyspace::RenameStatus::kTargetExists);
  EXPECT_EQ(keyspace.Find("k", kNow), entry);
  EXPECT_EQ(keyspace.Size(), 1u);
}

TEST(Keyspace, RenameCarriesTheDeadline) {
  Keyspace keyspace;
  EntryPtr entry = Put(keyspace, "src");
  ASSERT_TRUE(keyspace.SetExpire("src", kNow + 100, kNow));
  EXPECT_EQ(keyspace.Rename("src", "dst", false, kNow), Keyspace::RenameStatus::kOk);
  EXPECT_EQ(entry->expire_at_ms(), kNow + 100);
  EXPECT_EQ(keyspace.VolatileCount(), 1u);
  // The deadline index follows the new name: the sweep removes "dst".
  EXPECT_EQ(keyspace.SweepExpired(kNow + 100, 10), 1u);
  EXPECT_EQ(keyspace.Size(), 0u);
}

TEST(Keyspace, RenameOfAnExpiredSourceIsNoSuchKey) {
  Keyspace keyspace;
  Put(keyspace, "src");
  ASSERT_TRUE(keyspace.SetExpire("src", kNow + 1, kNow));
  EXPECT_EQ(keyspace.Rename("src", "dst", false, kNow + 1), Keyspace::RenameStatus::kNoSuchKey);
  EXPECT_EQ(keyspace.Find("dst", kNow + 1), nullptr);
}

TEST(Keyspace, RenameAcrossManyShardsKeepsEveryKey) {
  Keyspace keyspace;
  std::map<std::string, EntryPtr> entries;
  for (int i = 0; i < 500; ++i) entries["k" + std::to_string(i)] = Put(keyspace, "k" + std::to_string(i));
  for (int i = 0; i < 500; ++i) {
    ASSERT_EQ(keyspace.Rename("k" + std::to_string(i), "r" + std::to_string(i), false, kNow),
              Keyspace::RenameStatus::kOk);
  }
  EXPECT_EQ(keyspace.Size(), 500u);
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(keyspace.Find("r" + std::to_string(i), kNow), entries["k" + std::to_string(i)]);
  }
}

// ------------------------------------------------------------- expiry ---

TEST(Keyspace, FindPastTheDeadlineReturnsNullAndCountsAnExpiry) {
  Keyspace keyspace;
  Put(keyspace, "k");
  ASSERT_TRUE(keyspace.SetExpire("k", kNow + 100, kNow));
  EXPECT_NE(keyspace.Find("k", kNow + 99), nullptr);
  EXPECT_EQ(keyspace.expired_keys(), 0u);
  EXPECT_EQ(keyspace.Find("k", kNow + 100), nullptr);  // due at the deadline itself
  EXPECT_EQ(keyspace.expired_keys(), 1u);
  EXPECT_EQ(keyspace.Size(), 0u);
  EXPECT_EQ(keyspace.VolatileCount(), 0u);
  EXPECT_EQ(keyspace.Find("k", kNow + 100), nullptr);
  EXPECT_EQ(keyspace.expired_keys(), 1u);
}

TEST(Keyspace, SetExpireOnAMissingKeyFails) {
  Keyspace keyspace;
  EXPECT_FALSE(keyspace.SetExpire("k", kNow + 10, kNow));
  EXPECT_EQ(keyspace.VolatileCount(), 0u);
}

TEST(Keyspace, SetExpireZeroMakesAKeyPersistentAgain) {
  Keyspace keyspace;
  EntryPtr entry = Put(keyspace, "k");
  ASSERT_TRUE(keyspace.SetExpire("k", kNow + 10, kNow));
  EXPECT_EQ(entry->expire_at_ms(), kNow + 10);
  EXPECT_EQ(keyspace.VolatileCount(), 1u);
  ASSERT_TRUE(keyspace.SetExpire("k", 0, kNow));
  EXPECT_EQ(entry->expire_at_ms(), 0);
  EXPECT_EQ(keyspace.VolatileCount(), 0u);
  EXPECT_NE(keyspace.Find("k", kNow + 1'000'000), nullptr);
}

TEST(Keyspace, SetExpireBumpsTheVersion) {
  Keyspace keyspace;
  EntryPtr entry = Put(keyspace, "k");
  uint64_t version = entry->version();
  ASSERT_TRUE(keyspace.SetExpire("k", kNow + 10, kNow));
  EXPECT_NE(entry->version(), version);
}

TEST(Keyspace, MovingADeadlineLeavesOneIndexEntry) {
  Keyspace keyspace;
  Put(keyspace, "k");
  ASSERT_TRUE(keyspace.SetExpire("k", kNow + 10, kNow));
  ASSERT_TRUE(keyspace.SetExpire("k", kNow + 20, kNow));
  EXPECT_EQ(keyspace.VolatileCount(), 1u);
  EXPECT_EQ(keyspace.SweepExpired(kNow + 15, 100), 0u);
  EXPECT_EQ(keyspace.SweepExpired(kNow + 20, 100), 1u);
}

TEST(Keyspace, InsertOverAnExpiredEntryReplacesIt) {
  Keyspace keyspace;
  EntryPtr old = Put(keyspace, "k");
  ASSERT_TRUE(keyspace.SetExpire("k", kNow + 1, kNow));
  bool inserted = false;
  EntryPtr fresh = keyspace.Insert("k", MakeBloomEntry(), kNow + 1, &inserted);
  EXPECT_TRUE(inserted);
  EXPECT_NE(fresh, old);
  EXPECT_EQ(fresh->expire_at_ms(), 0);
  EXPECT_EQ(keyspace.Find("k", kNow + 1), fresh);
  EXPECT_EQ(keyspace.VolatileCount(), 0u);
  EXPECT_EQ(keyspace.expired_keys(), 1u);
}

TEST(Keyspace, EraseOfAnExpiredKeyReportsNothingRemoved) {
  Keyspace keyspace;
  Put(keyspace, "k");
  ASSERT_TRUE(keyspace.SetExpire("k", kNow + 1, kNow));
  EXPECT_FALSE(keyspace.Erase("k", kNow + 1));
  EXPECT_EQ(keyspace.Size(), 0u);
  EXPECT_EQ(keyspace.VolatileCount(), 0u);
}

TEST(Keyspace, EveryRemovalOfAnExpiredKeyCountsAsAnExpiry) {
  // INFO expired_keys: in Redis any lookup that meets an expired key deletes
  // it as expired (expireIfNeeded), whether the lookup came from a read, DEL
  // or RENAME's target.
  Keyspace keyspace;
  for (const char* key : {"found", "inserted", "erased", "renamed-over"}) {
    Put(keyspace, key);
    ASSERT_TRUE(keyspace.SetExpire(key, kNow + 1, kNow));
  }
  Put(keyspace, "src");
  const int64_t later = kNow + 1;
  EXPECT_EQ(keyspace.Find("found", later), nullptr);
  EXPECT_EQ(keyspace.expired_keys(), 1u);
  bool inserted = false;
  keyspace.Insert("inserted", MakeBloomEntry(), later, &inserted);
  EXPECT_EQ(keyspace.expired_keys(), 2u);
  EXPECT_FALSE(keyspace.Erase("erased", later));
  EXPECT_EQ(keyspace.expired_keys(), 3u) << "Erase of an expired key is not counted";
  EXPECT_EQ(keyspace.Rename("src", "renamed-over", false, later), Keyspace::RenameStatus::kOk);
  EXPECT_EQ(keyspace.expired_keys(), 4u) << "RENAME over an expired target is not counted";
}

TEST(Keyspace, ExpiredKeysAreInvisibleToIterationBeforeTheSweep) {
  Keyspace keyspace;
  Put(keyspace, "live");
  Put(keyspace, "dying");
  ASSERT_TRUE(keyspace.SetExpire("dying", kNow + 1, kNow));
  EXPECT_EQ(AllKeys(keyspace, "*", kNow + 1), (std::set<std::string>{"live"}));
  std::set<std::string> scanned;
  uint64_t cursor = 0;
  do {
    cursor = keyspace.Scan(cursor, 10, kNow + 1,
                           [&](const std::string& name, const EntryPtr&) { scanned.insert(name); });
  } while (cursor != 0);
  EXPECT_EQ(scanned, (std::set<std::string>{"live"}));
}

TEST(Keyspace, SweepRemovesExactlyTheDueKeys) {
  Keyspace keyspace;
  for (int i = 0; i < 200; ++i) {
    std::string key = "k" + std::to_string(i);
    Put(keyspace, key);
    if (i < 150) {  // k0..k149 are volatile
      ASSERT_TRUE(keyspace.SetExpire(key, kNow + 1 + i, kNow));
    }
  }
  EXPECT_EQ(keyspace.VolatileCount(), 150u);
  // Due at kNow + 100: k0..k99.
  EXPECT_EQ(keyspace.SweepExpired(kNow + 100, 1000), 100u);
  EXPECT_EQ(keyspace.expired_keys(), 100u);
  EXPECT_EQ(keyspace.Size(), 100u);
  EXPECT_EQ(keyspace.VolatileCount(), 50u);
  for (int i = 0; i < 200; ++i) {
    std::string key = "k" + std::to_string(i);
    // Look at a time when nothing else is due, so Find itself expires nothing.
    EXPECT_EQ(keyspace.Find(key, kNow + 100) != nullptr, i >= 100) << key;
  }
  EXPECT_EQ(keyspace.SweepExpired(kNow + 100, 1000), 0u);
  EXPECT_EQ(keyspace.expired_keys(), 100u);
}

TEST(Keyspace, SweepStopsAtItsLimit) {
  Keyspace keyspace;
  for (int i = 0; i < 100; ++i) {
    std::string key = "k" + std::to_string(i);
    Put(keyspace, key);
    ASSERT_TRUE(keyspace.SetExpire(key, kNow + 1, kNow));
  }
  EXPECT_EQ(keyspace.SweepExpired(kNow + 1, 30), 30u);
  EXPECT_EQ(keyspace.Size(), 70u);
  EXPECT_EQ(keyspace.expired_keys(), 30u);
  EXPECT_EQ(keyspace.SweepExpired(kNow + 1, 1000), 70u);
  EXPECT_EQ(keyspace.Size(), 0u);
  EXPECT_EQ(keyspace.expired_keys(), 100u);
  EXPECT_EQ(keyspace.SweepExpired(kNow + 1, 0), 0u);
}

// ------------------------------------------------------- iteration ---

TEST(Keyspace, ForEachKeyVisitsTheKeysMatchingAPattern) {
  Keyspace keyspace;
  for (const char* key : {"user:1", "user:2", "user:10", "item:1", "User:3"}) Put(keyspace, key);
  EXPECT_EQ(AllKeys(keyspace).size(), 5u);
  EXPECT_EQ(AllKeys(keyspace, "user:*"), (std::set<std::string>{"user:1", "user:2", "user:10"}));
  EXPECT_EQ(AllKeys(keyspace, "user:?"), (std::set<std::string>{"user:1", "user:2"}));
  EXPECT_EQ(AllKeys(keyspace, "[iU]*"), (std::set<std::string>{"item:1", "User:3"}));
  EXPECT_EQ(AllKeys(keyspace, "*:1"), (std::set<std::string>{"user:1", "item:1"}));
  EXPECT_TRUE(AllKeys(keyspace, "nomatch*").empty());
}

// Runs a whole SCAN iteration; returns how often each key was visited.
std::map<std::string, int> ScanAll(Keyspace& keyspace, size_t count,
                                   const std::function<void(size_t step)>& between = {}) {
  std::map<std::string, int> seen;
  uint64_t cursor = 0;
  size_t steps = 0;
  do {
    cursor = keyspace.Scan(cursor, count, kNow, [&](const std::string& name, const EntryPtr& e) {
      EXPECT_NE(e, nullptr);
      ++seen[name];
    });
    if (between) between(steps);
    ++steps;
    EXPECT_LT(steps, 1'000'000u) << "SCAN does not terminate";
  } while (cursor != 0 && steps < 1'000'000);
  return seen;
}

TEST(Keyspace, ScanOfAnEmptyKeyspaceEndsAtOnce) {
  Keyspace keyspace;
  int visits = 0;
  EXPECT_EQ(keyspace.Scan(0, 10, kNow, [&](const std::string&, const EntryPtr&) { ++visits; }),
            0u);
  EXPECT_EQ(visits, 0);
}

TEST(Keyspace, ScanReturnsEveryKeyExactlyOnceWithSmallCounts) {
  Keyspace keyspace;
  constexpr int kKeys = 10'000;
  for (int i = 0; i < kKeys; ++i) Put(keyspace, "key:" + std::to_string(i));
  std::map<std::string, int> seen = ScanAll(keyspace, /*count=*/7);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kKeys));
  for (const auto& [name, visits] : seen) ASSERT_EQ(visits, 1) << name;
}

TEST(Keyspace, ScanCallsReturnAboutCountKeys) {
  Keyspace keyspace;
  for (int i = 0; i < 1000; ++i) Put(keyspace, "key:" + std::to_string(i));
  uint64_t cursor = 0;
  size_t calls = 0;
  do {
    cursor = keyspace.Scan(cursor, 100, kNow, [](const std::string&, const EntryPtr&) {});
    ++calls;
  } while (cursor != 0);
  // Each call stops at a shard's end at the latest: at most 64 + 1000/100 calls.
  EXPECT_LE(calls, Keyspace::kShards + 10);
  EXPECT_GE(calls, 10u);
}

TEST(Keyspace, ScanSurvivesInsertsAndDeletesDuringIteration) {
  Keyspace keyspace;
  constexpr int kStable = 3000;
  for (int i = 0; i < kStable; ++i) Put(keyspace, "stable:" + std::to_string(i));
  for (int i = 0; i < 1000; ++i) Put(keyspace, "doomed:" + std::to_string(i));
  std::mt19937 rng(42);
  int added = 0, removed = 0;
  std::map<std::string, int> seen = ScanAll(keyspace, /*count=*/7, [&](size_t) {
    // Between calls: add two keys and delete one of the doomed ones.
    Put(keyspace, "new:" + std::to_string(added++));
    Put(keyspace, "new:" + std::to_string(added++));
    if (removed < 1000) {
      keyspace.Erase("doomed:" + std::to_string(rng() % 1000), kNow);
      ++removed;
    }
  });
  for (int i = 0; i < kStable; ++i) {
    ASSERT_EQ(seen["stable:" + std::to_string(i)], 1) << "stable:" << i;
  }
  for (const auto& [name, visits] : seen) ASSERT_EQ(visits, 1) << name;
}

TEST(Keyspace, ScanResumesFromAnyReturnedCursor) {
  Keyspace keyspace;
  for (int i = 0; i < 500; ++i) Put(keyspace, "k" + std::to_string(i));
  std::vector<uint64_t> cursors;
  uint64_t cursor = 0;
  do {
    cursor = keyspace.Scan(cursor, 13, kNow, [](const std::string&, const EntryPtr&) {});
    if (cursor != 0) cursors.push_back(cursor);
  } while (cursor != 0);
  ASSERT_FALSE(cursors.empty());
  // Restarting from the same cursor twice gives the same keys (a retrying client).
  for (uint64_t start : {cursors.front(), cursors[cursors.size() / 2], cursors.back()}) {
    std::vector<std::string> first, second;
    uint64_t next1 = keyspace.Scan(start, 13, kNow, [&](const std::string& n, const EntryPtr&) {
      first.push_back(n);
    });
    uint64_t next2 = keyspace.Scan(start, 13, kNow, [&](const std::string& n, const EntryPtr&) {
      second.push_back(n);
    });
    EXPECT_EQ(first, second);
    EXPECT_EQ(next1, next2);
  }
}

// ------------------------------------------------------ concurrency ---

TEST(Keyspace, RenameUnderConcurrentReadersNeverShowsAGapOrAFreedEntry) {
  // The documented way to swap in a rebuilt filter: build "shadow", then
  // RENAME shadow live. Readers of "live" must always find a whole filter.
  Keyspace keyspace;
  Put(keyspace, "live");
  constexpr int kRenames = 1000;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> reads{0};
  auto reader = [&] {
    uint64_t local = 0;
    while (!done.load(std::memory_order_acquire) || local < 100) {
      EntryPtr entry = keyspace.Find("live", kNow);
      ASSERT_NE(entry, nullptr) << "live missing during a rename";
      ASSERT_NE(entry->bloom(), nullptr);
      // Touch the filter: ASan/TSan catch a destroyed or half-built one.
      EXPECT_GE(entry->bloom()->capacity(), 1u);
      entry->bloom()->MayContain(HashKey("probe"));
      ++local;
    }
    reads.fetch_add(local, std::memory_order_relaxed);
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) readers.emplace_back(reader);
  for (int i = 0; i < kRenames; ++i) {
    Put(keyspace, "shadow");
    ASSERT_EQ(keyspace.Rename("shadow", "live", false, kNow), Keyspace::RenameStatus::kOk);
  }
  done.store(true, std::memory_order_release);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(keyspace.Size(), 1u);
  EXPECT_GE(reads.load(), 200u);
}

TEST(Keyspace, ConcurrentInsertsOfOneNameAgreeOnOneEntry) {
  Keyspace keyspace;
  constexpr int kThreads = 4;
  constexpr int kRounds = 100;
  for (int round = 0; round < kRounds; ++round) {
    std::string key = "k" + std::to_string(round);
    std::vector<EntryPtr> got(kThreads);
    std::atomic<int> winners{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        bool inserted = false;
        got[t] = keyspace.Insert(key, MakeBloomEntry(), kNow, &inserted);
        if (inserted) winners.fetch_add(1, std::memory_order_relaxed);
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(winners.load(), 1);
    for (int t = 1; t < kThreads; ++t) ASSERT_EQ(got[t], got[0]);
  }
  EXPECT_EQ(keyspace.Size(), static_cast<size_t>(kRounds));
}

TEST(Keyspace, ConcurrentWritersAndSweepKeepTheCountsExact) {
  Keyspace keyspace;
  constexpr int kThreads = 3;
  constexpr int kPerThread = 400;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string key = "t" + std::to_string(t) + ":" + std::to_string(i);
        bool inserted = false;
        keyspace.Insert(key, MakeBloomEntry(), kNow, &inserted);
        ASSERT_TRUE(inserted);
        if (i % 2 == 0) {
          ASSERT_TRUE(keyspace.SetExpire(key, kNow + 1, kNow));
        }
      }
    });
  }
  size_t swept = 0;
  std::thread sweeper([&] {
    for (int i = 0; i < 200; ++i) swept += keyspace.SweepExpired(kNow + 1, 16);
  });
  for (std::thread& t : threads) t.join();
  sweeper.join();
  swept += keyspace.SweepExpired(kNow + 1, 1'000'000);
  EXPECT_EQ(swept, static_cast<size_t>(kThreads * kPerThread / 2));
  EXPECT_EQ(keyspace.expired_keys(), swept);
  EXPECT_EQ(keyspace.Size(), static_cast<size_t>(kThreads * kPerThread / 2));
  EXPECT_EQ(keyspace.VolatileCount(), 0u);
}

}  // namespace
}  // namespace bloomgate
