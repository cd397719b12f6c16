// The family ops as values (bloom_ops.h, counting_bloom_ops.h,
// cuckoo_ops.h): called with a FilterStore, no CommandContext and no reply,
// they return statuses; each family's text function is the one mapping to
// RedisBloom's wording.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"
#include "filters/scalable_bloom_filter.h"
#include "server/base/clock.h"
#include "server/commands/bloom/bloom_ops.h"
#include "server/commands/counting_bloom/counting_bloom_ops.h"
#include "server/commands/cuckoo/cuckoo_ops.h"
#include "server/commands/errors.h"
#include "../decoding_subscriber.h"
#include "../session.h"

namespace bloomgate {
namespace {

using namespace bloomgate::testing;
using ItemViews = std::vector<std::string_view>;

// Counts what the ops hand the journal.
struct Recorder : DecodingSubscriber {
  void OnCommandRecord(const std::vector<std::string>&) override { ++commands; }
  void OnFilterRecord(const std::string& key, bool with_payload) override {
    created.emplace_back(key);
    EXPECT_FALSE(with_payload) << "a creation is journaled without its (all-zero) payload";
  }
  int commands = 0;
  std::vector<std::string> created;
};

class FamilyOps : public ::testing::Test {
 protected:
  FamilyOps() : server_(MakeServer()) { server_->journal.Subscribe(&recorder_); }
  ~FamilyOps() override { server_->journal.Unsubscribe(&recorder_); }

  FilterStore Store(bool write = true) {
    return StoreOf(*server_, session_, NowMs(), write);
  }
  static KeyRef Key(std::string_view name) { return MakeKeyRef(name); }

  std::unique_ptr<ServerContext> server_;
  JournalSession session_;
  Recorder recorder_;
};

// --- Bloom -------------------------------------------------------------

TEST_F(FamilyOps, BloomReserveStoresAndJournalsTheFilterThenRefusesTheTakenKey) {
  FilterStore store = Store();
  BloomParams params{.error_rate = 0.01, .capacity = 500, .expansion = 4};
  ASSERT_EQ(ReserveBloom(store, Key("k"), params), BloomStatus::kOk);
  EntryPtr entry = server_->keyspace.Find("k", NowMs());
  ASSERT_NE(entry, nullptr);
  ASSERT_NE(entry->bloom(), nullptr);
  EXPECT_EQ(entry->bloom()->capacity(), 500u);
  EXPECT_EQ(entry->bloom()->expansion(), 4u);
  EXPECT_EQ(recorder_.created, std::vector<std::string>{"k"});

  EXPECT_EQ(ReserveBloom(store, Key("k"), params), BloomStatus::kItemExists);
  EXPECT_EQ(recorder_.created.size(), 1u) << "a refused RESERVE journals nothing";
  ASSERT_EQ(ReserveCuckoo(store, Key("cf"), CuckooFilterOptions{}), CuckooStatus::kOk);
  EXPECT_EQ(ReserveBloom(store, Key("cf"), params), BloomStatus::kWrongType);
}

TEST_F(FamilyOps, BloomFindOrCreateHonoursNocreateAndTheConfigDefaults) {
  FilterStore store = Store();
  EntryPtr entry;
  CreateRule nocreate;
  nocreate.create = false;
  EXPECT_EQ(FindOrCreateBloom(store, Key("k"), nocreate, &entry), BloomStatus::kNotFound);
  EXPECT_EQ(entry, nullptr);
  EXPECT_EQ(server_->keyspace.Size(), 0u) << "NOCREATE creates nothing";

  CreateRule rule;
  rule.capacity = 77;  // the rest from bf-error-rate and bf-expansion-factor
  ASSERT_EQ(FindOrCreateBloom(store, Key("k"), rule, &entry), BloomStatus::kOk);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->bloom()->capacity(), 77u);
  EXPECT_EQ(entry->bloom()->expansion(), server_->config.Get().bf_expansion_factor);

  EntryPtr again;
  ASSERT_EQ(FindOrCreateBloom(store, Key("k"), nocreate, &again), BloomStatus::kOk);
  EXPECT_EQ(again, entry) << "an existing filter is found, not created again";
  EXPECT_EQ(recorder_.created.size(), 1u);
}

TEST_F(FamilyOps, BloomCreationRefusedByMaxFilterMemorySaysSoWithItsFigures) {
  FilterStore store = Store();
  store.limits.max_filter_bytes = 64;  // less than one 64-byte block plus bookkeeping
  EntryPtr entry;
  EXPECT_EQ(CreateBloom(store, Key("k"), BloomParams{.capacity = 1'000'000},
                        /*fail_if_exists=*/false, &entry),
            BloomStatus::kCreateOverFilterMemory);
  // The refusal's figures come back in the store, for the handler's text.
  EXPECT_EQ(store.refusal.limit, MemoryRefusal::Limit::kFilterCap);
  EXPECT_EQ(store.refusal.limit_bytes, 64u);
  EXPECT_GT(store.refusal.needed_bytes, 64u);
  EXPECT_EQ(entry, nullptr);
  EXPECT_EQ(server_->keyspace.Size(), 0u);
  EXPECT_TRUE(recorder_.created.empty());
}

TEST_F(FamilyOps, BloomAddsStopAtAFullNonScalingFilterAndSayWhichWentIn) {
  FilterStore store = Store();
  ASSERT_EQ(ReserveBloom(store, Key("k"), BloomParams{.capacity = 2, .expansion = 0}),
            BloomStatus::kOk);
  EntryPtr entry = server_->keyspace.Find("k", NowMs());
  const ItemViews items = {"a", "a", "b", "c", "d"};
  const uint64_t version = entry->version();
  BloomAddResult result = AddBloomItems(*entry, items);
  EXPECT_EQ(result.status, BloomStatus::kNonScalingFull) << ToString(result.status);
  EXPECT_EQ(result.added, (std::vector<bool>{true, false, true}))
      << "a, a again (not new), b; c found the filter full";
  EXPECT_GT(entry->version(), version) << "the filter changed: WATCH must see it";
  EXPECT_EQ(entry->bloom()->items(), 2u);

  const uint64_t before = entry->version();
  result = AddBloomItems(*entry, ItemViews{"a", "b"});
  EXPECT_EQ(result.status, BloomStatus::kOk);
  EXPECT_EQ(result.added, (std::vector<bool>{false, false}));
  EXPECT_EQ(entry->version(), before) << "adding what the filter holds changes nothing";
}

TEST_F(FamilyOps, BloomAddedEffectRecordsExactlyTheItemsThatWentIn) {
  const ItemViews items = {"x", "y", "z"};
  std::string counted;
  std::vector<std::string_view> effect;
  BloomAddedEffect("key", items, std::vector<bool>{true, false}, &counted, &effect);
  EXPECT_EQ(effect, (std::vector<std::string_view>{kBloomAddedEffect, "key", "10", "x", "y"}));

  BloomAddedEffect("key", items, std::vector<bool>{}, &counted, &effect);
  EXPECT_TRUE(effect.empty()) << "nothing went in: nothing to journal";
}

TEST_F(FamilyOps, BloomStatusesMapToRedisBloomTexts) {
  EXPECT_EQ(BloomStatusText(BloomStatus::kNotFound), errors::kNotFound);
  EXPECT_EQ(BloomStatusText(BloomStatus::kWrongType), errors::kWrongType);
  EXPECT_EQ(BloomStatusText(BloomStatus::kItemExists), errors::kItemExists);
  EXPECT_EQ(BloomStatusText(BloomStatus::kCreateFailed), errors::kInsufficientMemory);
  EXPECT_EQ(BloomStatusText(BloomStatus::kCreateOverFilterMemory), errors::kInsufficientMemory);
  EXPECT_EQ(BloomStatusText(BloomStatus::kCreateOverMaxmemory), errors::kInsufficientMemory);
  EXPECT_EQ(BloomStatusText(BloomStatus::kGrowOverFilterMemory), errors::kProblemInserting);
  EXPECT_EQ(BloomStatusText(BloomStatus::kNonScalingFull), errors::kNonScalingFull);
  EXPECT_EQ(BloomStatusText(BloomStatus::kOutOfMemory), errors::kOom);
  EXPECT_EQ(BloomStatusText(BloomStatus::kProblemInserting), errors::kProblemInserting);
  EXPECT_EQ(BloomAddStatus(FilterStatus::kFull), BloomStatus::kNonScalingFull);
  EXPECT_EQ(BloomAddStatus(FilterStatus::kOutOfMemory), BloomStatus::kOutOfMemory);
  EXPECT_EQ(BloomAddStatus(FilterStatus::kTooManyLayers), BloomStatus::kTooManyLayers);
  EXPECT_EQ(BloomStatusText(BloomStatus::kTooManyLayers), errors::kTooManyLayers);
  EXPECT_EQ(BloomStatusText(BloomStatus::kErrorRateFloor), errors::kErrorRateFloor);
  EXPECT_EQ(BloomAddStatus(FilterStatus::kFilterMemoryLimit), BloomStatus::kGrowOverFilterMemory);
  const MemoryRefusal budget{MemoryRefusal::Limit::kBudget, 1000, 65536, 65000};
  EXPECT_EQ(BloomCreateStatus(FilterStatus::kOutOfMemory, budget), BloomStatus::kCreateOverMaxmemory);
  EXPECT_EQ(BloomCreateStatus(FilterStatus::kOutOfMemory, {}), BloomStatus::kCreateFailed);
  EXPECT_EQ(BloomFailureText(BloomStatus::kCreateOverMaxmemory, budget),
            "ERR Insufficient memory to create filter: needs 1000 bytes, maxmemory has 536 bytes "
            "free of 65536");
  EXPECT_EQ(BloomFailureText(BloomStatus::kNonScalingFull, budget), errors::kNonScalingFull);
}

// --- Counting Bloom -----------------------------------------------------

TEST_F(FamilyOps, CountingAddsAndDeletesCountOccurrences) {
  FilterStore store = Store();
  EntryPtr entry;
  CreateRule rule;
  rule.counter_bits = 8;
  ASSERT_EQ(FindOrCreateCounting(store, Key("c"), rule, &entry), BloomStatus::kOk);
  ASSERT_NE(entry->get<CountingBloomFilter>(), nullptr);
  EXPECT_EQ(entry->get<CountingBloomFilter>()->counter_bits(), 8u);

  BloomAddResult added = AddCountingItems(*entry, ItemViews{"a", "a", "b"});
  EXPECT_EQ(added.status, BloomStatus::kOk);
  EXPECT_EQ(added.added, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(DeleteCountingItems(*entry, ItemViews{"a", "never-added"}),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(entry->get<CountingBloomFilter>()->Count(entry->get<CountingBloomFilter>()->Hash("a")), 1u)
      << "one of a's two occurrences is left";
  EXPECT_EQ(DeleteCountingItems(*entry, ItemViews{"a"}), std::vector<bool>{true});
  EXPECT_FALSE(entry->get<CountingBloomFilter>()->MayContain(entry->get<CountingBloomFilter>()->Hash("a")));
}

TEST_F(FamilyOps, CountingOpsRefuseAnotherFamilyAndNocreate) {
  FilterStore store = Store();
  ASSERT_EQ(ReserveBloom(store, Key("bf"), BloomParams{}), BloomStatus::kOk);
  EntryPtr entry;
  EXPECT_EQ(FindOrCreateCounting(store, Key("bf"), CreateRule{}, &entry),
            BloomStatus::kWrongType);
  EXPECT_EQ(ReserveCounting(store, Key("bf"), BloomParams{}), BloomStatus::kWrongType);
  CreateRule nocreate;
  nocreate.create = false;
  EXPECT_EQ(FindOrCreateCounting(store, Key("missing"), nocreate, &entry),
            BloomStatus::kNotFound);
  ASSERT_EQ(ReserveCounting(store, Key("c"), BloomParams{}), BloomStatus::kOk);
  EXPECT_EQ(ReserveCounting(store, Key("c"), BloomParams{}), BloomStatus::kItemExists);
}

TEST_F(FamilyOps, CountingAddsStopAtAFullNonScalingFilter) {
  FilterStore store = Store();
  ASSERT_EQ(ReserveCounting(store, Key("c"), BloomParams{.capacity = 1, .expansion = 0}),
            BloomStatus::kOk);
  EntryPtr entry = server_->keyspace.Find("c", NowMs());
  BloomAddResult result = AddCountingItems(*entry, ItemViews{"a", "b", "c"});
  EXPECT_EQ(result.status, BloomStatus::kNonScalingFull) << ToString(result.status);
  EXPECT_EQ(result.added, std::vector<bool>{true});
}

// CBF.MADD's batch path (hash a chunk of 128, prefetch, one pass per item)
// against CBF.ADD's one call per item: same replies and the same counters,
// across chunks and two growths.
TEST_F(FamilyOps, CountingAddsInOneCallMatchOneCallPerItemAcrossChunksAndGrowths) {
  FilterStore store = Store();
  const BloomParams params{.capacity = 60, .expansion = 2, .seed = 99};
  ASSERT_EQ(ReserveCounting(store, Key("batch"), params), BloomStatus::kOk);
  ASSERT_EQ(ReserveCounting(store, Key("each"), params), BloomStatus::kOk);
  EntryPtr batch = server_->keyspace.Find("batch", NowMs());
  EntryPtr each = server_->keyspace.Find("each", NowMs());
  std::vector<std::string> names;
  for (int i = 0; i < 450; ++i) names.push_back("item" + std::to_string(i * 7 % 200));
  const ItemViews items(names.begin(), names.end());
  const BloomAddResult all = AddCountingItems(*batch, items);
  std::vector<bool> one_by_one;
  for (std::string_view item : items) {
    const BloomAddResult one = AddCountingItems(*each, ItemViews{item});
    ASSERT_EQ(one.status, BloomStatus::kOk);
    one_by_one.push_back(one.added.at(0));
  }
  EXPECT_EQ(all.status, BloomStatus::kOk);
  EXPECT_EQ(all.added, one_by_one);
  const CountingBloomFilter& a = *batch->get<CountingBloomFilter>();
  const CountingBloomFilter& b = *each->get<CountingBloomFilter>();
  ASSERT_EQ(a.num_layers(), 3u) << "60 + 120 + 240 for 200 distinct items";
  ASSERT_EQ(b.num_layers(), a.num_layers());
  EXPECT_EQ(a.items(), 450u);
  for (uint32_t layer = 0; layer < a.num_layers(); ++layer) {
    EXPECT_EQ(a.Layers()[layer].net_items, b.Layers()[layer].net_items) << "layer " << layer;
    for (uint64_t w = 0; w < a.layer(layer).num_words(); ++w) {
      ASSERT_EQ(a.layer(layer).words()[w].load(std::memory_order_relaxed),
                b.layer(layer).words()[w].load(std::memory_order_relaxed))
          << "layer " << layer << " word " << w;
    }
  }
}

// --- Cuckoo -------------------------------------------------------------

TEST_F(FamilyOps, CuckooAutoCreateRefusesACapacityBelowTwoBuckets) {
  FilterStore store = Store();
  EntryPtr entry;
  EXPECT_EQ(FindOrCreateCuckoo(store, Key("cf"), /*create=*/true, /*capacity=*/1, &entry),
            CuckooStatus::kInsertCapacityRange);
  EXPECT_EQ(server_->keyspace.Size(), 0u);
  EXPECT_EQ(FindOrCreateCuckoo(store, Key("cf"), /*create=*/false, std::nullopt, &entry),
            CuckooStatus::kNotFound);
  ASSERT_EQ(FindOrCreateCuckoo(store, Key("cf"), /*create=*/true, /*capacity=*/64, &entry),
            CuckooStatus::kOk);
  EXPECT_EQ(entry->get<CuckooFilter>()->Info().num_buckets, 32u) << "64 / bucket size 2";
  EXPECT_EQ(recorder_.created, std::vector<std::string>{"cf"});
}

TEST_F(FamilyOps, CuckooAddNxDeleteAndCompact) {
  FilterStore store = Store();
  EntryPtr entry;
  ASSERT_EQ(FindOrCreateCuckoo(store, Key("cf"), true, std::nullopt, &entry), CuckooStatus::kOk);
  bool added = false;
  EXPECT_EQ(AddCuckooItem(*entry, "a", /*only_if_absent=*/true, Admission::kClient, &added),
            CuckooStatus::kOk);
  EXPECT_TRUE(added);
  EXPECT_EQ(AddCuckooItem(*entry, "a", /*only_if_absent=*/true, Admission::kClient, &added),
            CuckooStatus::kOk);
  EXPECT_FALSE(added) << "NX: a is there";
  EXPECT_EQ(AddCuckooItem(*entry, "a", /*only_if_absent=*/false, Admission::kClient, &added),
            CuckooStatus::kOk);
  EXPECT_TRUE(added) << "CF.ADD always adds a fingerprint";
  EXPECT_EQ(entry->get<CuckooFilter>()->Count(entry->get<CuckooFilter>()->Hash("a")), 2u);
  EXPECT_TRUE(DeleteCuckooItem(*entry, "a"));
  EXPECT_TRUE(DeleteCuckooItem(*entry, "a"));
  EXPECT_FALSE(DeleteCuckooItem(*entry, "a"));
  const uint64_t version = entry->version();
  CompactCuckoo(*entry);
  EXPECT_GT(entry->version(), version);
}

TEST_F(FamilyOps, CuckooInsertsIntoAFullNonScalingFilterSayNoRoomPerItem) {
  FilterStore store = Store();
  CuckooFilterOptions options;
  options.capacity = 4;  // 2 buckets of 2 slots
  options.expansion = 0;
  ASSERT_EQ(ReserveCuckoo(store, Key("cf"), options), CuckooStatus::kOk);
  EntryPtr entry = server_->keyspace.Find("cf", NowMs());
  ItemViews items;
  std::vector<std::string> names;
  for (int i = 0; i < 16; ++i) names.push_back("item" + std::to_string(i));
  for (const std::string& name : names) items.push_back(name);
  CuckooInsertResult result =
      InsertCuckooItems(*entry, items, /*only_if_absent=*/false, Admission::kClient);
  EXPECT_EQ(result.status, CuckooStatus::kOk) << "no room is per item, not a stop";
  ASSERT_EQ(result.results.size(), items.size());
  size_t in = 0, no_room = 0;
  for (CuckooInsert one : result.results) {
    in += one == CuckooInsert::kAdded;
    no_room += one == CuckooInsert::kNoRoom;
  }
  EXPECT_EQ(in + no_room, items.size());
  EXPECT_LE(in, 4u) << "4 slots";
  EXPECT_GE(no_room, 12u);
  EXPECT_EQ(entry->get<CuckooFilter>()->Info().items, in);

  bool added = true;
  EXPECT_EQ(AddCuckooItem(*entry, "one more", false, Admission::kClient, &added), CuckooStatus::kFull);
  EXPECT_FALSE(added);
}

TEST_F(FamilyOps, CuckooStatusesMapToRedisBloomTexts) {
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kNotFound), errors::kNotFound);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kWrongType), errors::kWrongType);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kItemExists), errors::kItemExists);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kInsertCapacityRange), errors::kCfInsertCapacityRange);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kCreateFailed), errors::kInsufficientMemory);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kCreateOverFilterMemory), errors::kInsufficientMemory);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kCreateOverMaxmemory), errors::kInsufficientMemory);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kGrowOverFilterMemory), errors::kCfInsufficientMemory);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kCouldNotCreate), errors::kCouldNotCreateFilter);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kFull), errors::kCfFull);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kMaxExpansions), errors::kCfMaxExpansions);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kOutOfMemory), errors::kCfInsufficientMemory);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kNothingToDelete), errors::kCfDelNotFound);
  EXPECT_EQ(CuckooStatusText(CuckooStatus::kNothingToCompact), errors::kCfCompactNotFound);
  EXPECT_EQ(CuckooAddStatus(FilterStatus::kOutOfMemory), CuckooStatus::kOutOfMemory);
  EXPECT_EQ(CuckooAddStatus(FilterStatus::kFilterMemoryLimit), CuckooStatus::kGrowOverFilterMemory);
}

TEST_F(FamilyOps, AReadStoreCountsHitsAndMissesWhenGivenCounters) {
  FilterStore store = Store(/*write=*/false);
  WorkerCounters& counters = server_->stats.worker(0);
  store.counters = &counters;
  const uint64_t hits = counters.keyspace_hits.load(), misses = counters.keyspace_misses.load();
  EntryPtr entry;
  EXPECT_EQ(FindFilter<ScalableBloomFilter>(store, Key("k"), &entry), Lookup::kMissing);
  ASSERT_EQ(ReserveBloom(store, Key("k"), BloomParams{}), BloomStatus::kOk);
  EXPECT_EQ(FindFilter<ScalableBloomFilter>(store, Key("k"), &entry), Lookup::kFound);
  EXPECT_EQ(FindFilter<CuckooFilter>(store, Key("k"), &entry), Lookup::kWrongType);
  EXPECT_EQ(entry, nullptr);
  EXPECT_EQ(counters.keyspace_misses.load() - misses, 1u);
  EXPECT_EQ(counters.keyspace_hits.load() - hits, 2u);
}

}  // namespace
}  // namespace bloomgate
