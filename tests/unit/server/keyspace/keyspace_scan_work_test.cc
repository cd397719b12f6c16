// SCAN's cost, counted rather than timed: a full iteration must step over
// each key a bounded number of times, and one call's work must depend on its
// COUNT, not on how far the cursor has got (issue: a full SCAN of 80k keys
// took 9 s because every call re-sorted the cursor's whole shard).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "server/keyspace/keyspace.h"
#include "../session.h"

namespace bloomgate {
namespace {

constexpr int64_t kScanNow = 1'000'000;

TEST(KeyspaceScanWork, AFullScanStepsOverEachKeyAtMostTwice) {
  constexpr size_t kKeys = 200'000;
  constexpr size_t kCount = 100;
  Keyspace keyspace;
  // One entry under every name: the test is about names, not filters.
  EntryPtr shared = testing::MakeBloomEntry();
  for (size_t i = 0; i < kKeys; ++i) keyspace.Put("key:" + std::to_string(i), shared, 0);

  std::set<std::string> seen;
  uint64_t cursor = 0;
  uint64_t total_before = keyspace.scan_steps();
  uint64_t widest_call = 0;
  size_t calls = 0;
  // Bounded: a correct scan needs about kKeys / kCount calls.
  const size_t max_calls = 4 * kKeys / kCount;
  do {
    uint64_t before = keyspace.scan_steps();
    cursor = keyspace.Scan(cursor, kCount, kScanNow, [&](const std::string& name, const EntryPtr&) {
      EXPECT_TRUE(seen.insert(name).second) << "returned twice: " << name;
    });
    widest_call = std::max(widest_call, keyspace.scan_steps() - before);
    ++calls;
  } while (cursor != 0 && calls < max_calls);

  ASSERT_EQ(cursor, 0u) << "the scan did not finish in " << max_calls << " calls";
  EXPECT_EQ(seen.size(), kKeys);
  uint64_t total = keyspace.scan_steps() - total_before;
  EXPECT_LE(total, 2 * kKeys) << "a full SCAN of " << kKeys << " keys with COUNT " << kCount
                              << " stepped over " << total << " index entries in " << calls
                              << " calls";
  // A call looks at COUNT keys, plus the rest of one group of equal hashes
  // (none here) and one step to see where the next shard starts.
  EXPECT_LE(widest_call, 2 * kCount) << "one SCAN call stepped over " << widest_call
                                     << " entries for COUNT " << kCount;
}

TEST(KeyspaceScanWork, ALateCursorCostsNoMoreThanAnEarlyOne) {
  constexpr size_t kKeys = 50'000;
  Keyspace keyspace;
  EntryPtr shared = testing::MakeBloomEntry();
  for (size_t i = 0; i < kKeys; ++i) keyspace.Put("k" + std::to_string(i), shared, 0);
  auto steps_of_one_call = [&](uint64_t cursor) {
    uint64_t before = keyspace.scan_steps();
    keyspace.Scan(cursor, /*count=*/10, kScanNow, [](const std::string&, const EntryPtr&) {});
    return keyspace.scan_steps() - before;
  };
  // Near the start, and near the end, of the same (first) shard.
  uint64_t early = steps_of_one_call(0);
  uint64_t late = steps_of_one_call((uint64_t{1} << (64 - Keyspace::kShardBits)) - (uint64_t{1} << 50));
  EXPECT_LE(early, 20u);
  EXPECT_LE(late, 20u);
}

}  // namespace
}  // namespace bloomgate
