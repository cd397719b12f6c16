// The batch calls BF.MADD / BF.MEXISTS / CF.MEXISTS use (prefetch every
// line, then probe) against one call per item: the same answers, the same
// item counts and growth, the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "filter_test_support.h"
#include "filters/cuckoo_filter.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

using test_support::ItemHash;

std::unique_ptr<ScalableBloomFilter> MakeBloom(uint64_t capacity, uint32_t expansion,
                                               BloomLayout layout = BloomLayout::kBlocked) {
  ScalableBloomOptions options;
  options.capacity = capacity;
  options.expansion = expansion;
  options.hash_seed = 0x5eed;
  options.layout = layout;
  std::unique_ptr<ScalableBloomFilter> filter;
  EXPECT_EQ(ScalableBloomFilter::Create(options, FilterLimits{}, nullptr, &filter),
            FilterStatus::kOk);
  return filter;
}

// Items 0..n-1 with every third one a repeat of an earlier item, so both
// "new" and "already there" answers (and in-batch repeats) occur.
std::vector<KeyHash> Items(uint64_t n) {
  std::vector<KeyHash> hashes;
  for (uint64_t i = 0; i < n; ++i) hashes.push_back(ItemHash("item", i % 3 == 2 ? i / 2 : i));
  return hashes;
}

void ExpectSameFilter(const ScalableBloomFilter& a, const ScalableBloomFilter& b) {
  ASSERT_EQ(a.num_layers(), b.num_layers());
  EXPECT_EQ(a.items(), b.items());
  const auto la = a.Layers();
  const auto lb = b.Layers();
  for (uint32_t i = 0; i < a.num_layers(); ++i) {
    EXPECT_EQ(la[i].items, lb[i].items) << "layer " << i;
    ASSERT_EQ(a.layer(i).num_words(), b.layer(i).num_words());
    EXPECT_EQ(std::memcmp(a.layer(i).words(), b.layer(i).words(), a.layer(i).num_words() * 8), 0)
        << "bits of layer " << i;
  }
}

// Add one by one into `one`, AddBatch in chunks of `chunk` into `batch`.
void AddBoth(ScalableBloomFilter* one, ScalableBloomFilter* batch, const std::vector<KeyHash>& h,
             size_t chunk, FilterStatus expect_last) {
  std::vector<bool> one_added;
  FilterStatus one_status = FilterStatus::kOk;
  for (const KeyHash& item : h) {
    bool added = false;
    one_status = one->Add(item, &added);
    if (one_status != FilterStatus::kOk) break;
    one_added.push_back(added);
  }
  std::vector<bool> batch_added;
  FilterStatus batch_status = FilterStatus::kOk;
  std::unique_ptr<bool[]> added(new bool[chunk]);
  for (size_t start = 0; start < h.size(); start += chunk) {
    const size_t count = std::min(chunk, h.size() - start);
    size_t done = 0;
    batch_status = batch->AddBatch({h.data() + start, count}, added.get(), &done);
    ASSERT_LE(done, count);
    batch_added.insert(batch_added.end(), added.get(), added.get() + done);
    if (batch_status != FilterStatus::kOk) {
      EXPECT_LT(done, count);
      break;
    }
    EXPECT_EQ(done, count);
  }
  EXPECT_EQ(one_status, expect_last);
  EXPECT_EQ(batch_status, one_status);
  EXPECT_EQ(batch_added, one_added);
}

TEST(BloomBatch, AddBatchGrowsAndCountsExactlyAsAddDoes) {
  // Capacity 100, expansion 2: 6,000 items grow ~6 layers, crossing layer
  // boundaries inside batches (the uncounted items of a pass must count
  // towards the fill check, or a layer takes more than its capacity).
  for (const size_t chunk : {size_t{1}, size_t{7}, size_t{100}, size_t{1000}}) {
    SCOPED_TRACE(chunk);
    auto one = MakeBloom(100, 2);
    auto batch = MakeBloom(100, 2);
    AddBoth(one.get(), batch.get(), Items(6000), chunk, FilterStatus::kOk);
    EXPECT_GE(batch->num_layers(), 5u);
    ExpectSameFilter(*one, *batch);
  }
}

TEST(BloomBatch, AddBatchStopsWhereAFullNonScalingFilterRefuses) {
  auto one = MakeBloom(500, /*expansion=*/0);
  auto batch = MakeBloom(500, 0);
  AddBoth(one.get(), batch.get(), Items(2000), 64, FilterStatus::kFull);
  EXPECT_EQ(batch->items(), 500u);
  ExpectSameFilter(*one, *batch);
}

TEST(BloomBatch, AddBatchOnARedisBloomLayoutFilterMatchesAdd) {
  auto one = MakeBloom(100, 2, BloomLayout::kRedisBloom);
  auto batch = MakeBloom(100, 2, BloomLayout::kRedisBloom);
  AddBoth(one.get(), batch.get(), Items(3000), 100, FilterStatus::kOk);
  ExpectSameFilter(*one, *batch);
}

TEST(BloomBatch, MayContainBatchAnswersAsMayContainOverManyLayers) {
  for (const BloomLayout layout : {BloomLayout::kBlocked, BloomLayout::kRedisBloom}) {
    auto filter = MakeBloom(50, 2, layout);
    bool added = false;
    for (uint64_t i = 0; i < 20'000; ++i) {
      ASSERT_EQ(filter->Add(ItemHash("in", i), &added), FilterStatus::kOk);
    }
    ASSERT_GE(filter->num_layers(), 9u);
    // Present items from every layer, and absent ones (some false positives).
    std::vector<KeyHash> queries;
    for (uint64_t i = 0; i < 20'000; i += 7) queries.push_back(ItemHash("in", i));
    for (uint64_t i = 0; i < 20'000; ++i) queries.push_back(ItemHash("out", i));
    std::unique_ptr<bool[]> found(new bool[queries.size()]);
    filter->MayContainBatch(queries, found.get());
    uint64_t positives = 0;
    for (size_t i = 0; i < queries.size(); ++i) {
      ASSERT_EQ(found[i], filter->MayContain(queries[i])) << "query " << i;
      positives += found[i];
    }
    EXPECT_GE(positives, 20'000u / 7);  // every added item is found
  }
}

TEST(CuckooBatch, MayContainBatchAnswersAsMayContainOverSubFilters) {
  CuckooFilterOptions options;
  options.capacity = 256;
  options.expansion = 2;
  std::unique_ptr<CuckooFilter> filter;
  ASSERT_EQ(CuckooFilter::Create(options, FilterLimits{}, nullptr, &filter), FilterStatus::kOk);
  for (uint64_t i = 0; i < 3000; ++i) ASSERT_EQ(filter->Add(ItemHash("in", i)), FilterStatus::kOk);
  ASSERT_GE(filter->num_filters(), 3u);
  std::vector<KeyHash> queries;
  for (uint64_t i = 0; i < 3000; i += 3) queries.push_back(ItemHash("in", i));
  for (uint64_t i = 0; i < 3000; ++i) queries.push_back(ItemHash("out", i));
  std::unique_ptr<bool[]> found(new bool[queries.size()]);
  filter->MayContainBatch(queries, found.get());
  for (size_t i = 0; i < queries.size(); ++i) {
    ASSERT_EQ(found[i], filter->MayContain(queries[i])) << "query " << i;
  }
  for (size_t i = 0; i < 1000; ++i) EXPECT_TRUE(found[i]) << "added item " << i;
}

}  // namespace
}  // namespace bloomgate
