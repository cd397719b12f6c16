// LayerChain on its own: the growth rule, the reservation rules and racing
// growers, as the filters built on it (and the windowed ones next) rely on.
// Run under ThreadSanitizer as well as Release.

#include "filters/layer_chain.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "filters/memory_budget.h"
#include "filters/scalable_bloom_filter.h"

namespace bloomgate {
namespace {

using Chain = LayerChain<BloomLayerTraits>;

// A chain built as ScalableBloomFilter builds one, with no owner bytes.
std::unique_ptr<Chain> MakeChain(uint64_t capacity, uint32_t expansion, const FilterLimits& limits,
                                 MemoryBudget* budget) {
  Chain::Pending first;
  if (Chain::Start(capacity, Chain::FirstErrorRate(0.01, expansion), kBloomBlockBits,
                   /*owner_bytes=*/0, limits, budget, &first) != FilterStatus::kOk) {
    return nullptr;
  }
  return std::make_unique<Chain>(std::move(first), expansion, limits);
}

TEST(LayerChain, EachLayerHasExpansionTimesTheCapacityAndHalfTheError) {
  const auto chain = MakeChain(/*capacity=*/100, /*expansion=*/4, FilterLimits{}, nullptr);
  ASSERT_NE(chain, nullptr);
  for (int i = 0; i < 3; ++i) {
    const Chain::List* list = &chain->Load();
    ASSERT_EQ(chain->Grow(list, &list), FilterStatus::kOk);
  }
  const Chain::List& list = chain->Load();
  ASSERT_EQ(list.size(), 4u);
  uint64_t capacity = 100;
  double error = 0.01 * 0.5;  // a scaling chain's first layer: half the rate
  for (uint32_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(list[i].capacity, capacity) << "layer " << i;
    EXPECT_EQ(list[i].error_rate, error) << "layer " << i;
    capacity *= 4;
    error *= 0.5;
  }
  EXPECT_EQ(chain->capacity(), 100u + 400 + 1600 + 6400);
}

TEST(LayerChain, AFailedGrowthLeavesTheChainAndTheBudgetAsTheyWere) {
  MemoryBudget budget(/*limit_bytes=*/0);
  const auto chain = MakeChain(/*capacity=*/1000, /*expansion=*/2, FilterLimits{}, &budget);
  ASSERT_NE(chain, nullptr);
  const uint64_t bytes = chain->memory_bytes();
  EXPECT_EQ(budget.used(), bytes);
  budget.set_limit(bytes + 64);  // far less than a 2,000-item layer
  const Chain::List* list = &chain->Load();
  EXPECT_EQ(chain->Grow(list, &list), FilterStatus::kOutOfMemory);
  EXPECT_EQ(list, &chain->Load());
  EXPECT_EQ(chain->num_layers(), 1u);
  EXPECT_EQ(chain->memory_bytes(), bytes);
  EXPECT_EQ(budget.used(), bytes);
}

TEST(LayerChain, ANonScalingChainNeverGrows) {
  const auto chain = MakeChain(/*capacity=*/10, /*expansion=*/0, FilterLimits{}, nullptr);
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->Load()[0].error_rate, 0.01);  // all of the rate, not half
  const Chain::List* list = &chain->Load();
  EXPECT_EQ(chain->Grow(list, &list), FilterStatus::kFull);
  EXPECT_EQ(chain->num_layers(), 1u);
}

TEST(LayerChain, RacingGrowersOfOneListAppendExactlyOneLayer) {
  // Every thread saw the same one-layer list and asks to grow it at once:
  // the first appends, the others must get that layer back, not add theirs.
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  MemoryBudget budget(/*limit_bytes=*/0);
  const auto chain = MakeChain(/*capacity=*/1, /*expansion=*/1, FilterLimits{}, &budget);
  ASSERT_NE(chain, nullptr);
  std::barrier start(kThreads);
  std::atomic<int> appended{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < kRounds; ++round) {
        const Chain::List* seen = &chain->Load();
        start.arrive_and_wait();  // all threads hold the same `seen`
        const Chain::List* current = nullptr;
        if (chain->Grow(seen, &current) == FilterStatus::kOk && current->size() > seen->size()) {
          // Relaxed: a count read after join().
          appended.fetch_add(1, std::memory_order_relaxed);
        }
        start.arrive_and_wait();  // nobody loads the next `seen` before all grew
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(chain->num_layers(), 1u + kRounds) << "one layer per round, whoever wins";
  // Every thread reports the growth it got back, so each round counts kThreads.
  EXPECT_EQ(appended.load(std::memory_order_relaxed), kThreads * kRounds);
  EXPECT_EQ(budget.used(), chain->memory_bytes());
}

TEST(LayerChain, RestoreRebuildsTheSameBytesAsGrowth) {
  MemoryBudget budget(/*limit_bytes=*/0);
  const auto grown = MakeChain(/*capacity=*/50, /*expansion=*/2, FilterLimits{}, &budget);
  ASSERT_NE(grown, nullptr);
  for (int i = 0; i < 2; ++i) {
    const Chain::List* list = &grown->Load();
    ASSERT_EQ(grown->Grow(list, &list), FilterStatus::kOk);
  }
  std::vector<Chain::Shape> shapes;
  const Chain::List& list = grown->Load();
  for (uint32_t i = 0; i < list.size(); ++i) {
    shapes.push_back(Chain::Shape{list[i].capacity, /*items=*/i + 1, list[i].error_rate,
                                  list[i].cells->bits(), list[i].cells->probes()});
  }
  Chain::Pending pending;
  ASSERT_EQ(Chain::Restore(shapes, /*expansion=*/2, kBloomBlockBits, /*owner_bytes=*/0,
                           FilterLimits{}, &budget, &pending),
            FilterStatus::kOk);
  const Chain restored(std::move(pending), /*expansion=*/2, FilterLimits{});
  EXPECT_EQ(restored.memory_bytes(), grown->memory_bytes());
  EXPECT_EQ(restored.item_sum(), 1u + 2 + 3);
  EXPECT_EQ(budget.used(), 2 * grown->memory_bytes());
}

}  // namespace
}  // namespace bloomgate
