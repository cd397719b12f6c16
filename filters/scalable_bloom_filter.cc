#include "filters/scalable_bloom_filter.h"

#include "filters/hash_seed.h"

#include <algorithm>
#include <new>
#include <utility>

namespace bloomgate {

FilterStatus ScalableBloomFilter::Create(const ScalableBloomOptions& options,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         std::unique_ptr<ScalableBloomFilter>* out) {
  out->reset();
  // Out-of-range options are the caller's to reject with a proper text; here
  // they only must not produce a filter (no NaN, zero or > 32768 shapes that a
  // snapshot loader would refuse).
  if (!(options.error_rate > 0 && options.error_rate < 1) || options.capacity == 0 ||
      options.expansion > kMaxBloomExpansion) {
    return FilterStatus::kFilterMemoryLimit;
  }
  const double error_rate = std::min(options.error_rate, kMaxBloomErrorRate);
  const bool redisbloom = options.layout == BloomLayout::kRedisBloom;
  Chain::Pending first;
  const FilterStatus status =
      Chain::Start(options.capacity, Chain::FirstErrorRate(error_rate, options.expansion),
                   /*block_cells=*/BloomLayoutCells(options.layout),
                   /*owner_bytes=*/sizeof(ScalableBloomFilter),
                   limits, budget, &first);
  // RedisBloom's hash takes no seed: such a filter's seed stays 0.
  return Adopt(status, error_rate, options.expansion,
               redisbloom ? 0 : SeedOrNew(options.hash_seed),
               limits, &first, out);
}

FilterStatus ScalableBloomFilter::Restore(double error_rate, uint32_t expansion,
                                          std::span<const BloomLayerShape> layers,
                                          const FilterLimits& limits, MemoryBudget* budget,
                                          std::unique_ptr<ScalableBloomFilter>* out,
                                          uint64_t hash_seed, BloomLayout layout) {
  out->reset();
  // The loader has already refused this with a precise text; here it only
  // must never produce a filter. The chain checks the rest the same way.
  if (!(error_rate > 0 && error_rate <= kMaxBloomErrorRate)) return FilterStatus::kInvalidOptions;
  Chain::Pending chain;
  const FilterStatus status =
      Chain::Restore(layers, expansion,
                     /*block_cells=*/BloomLayoutCells(layout),
                     /*owner_bytes=*/sizeof(ScalableBloomFilter), limits, budget, &chain);
  return Adopt(status, error_rate, expansion, hash_seed, limits, &chain, out);
}

// The chain gives memory_bytes() back to the budget.
ScalableBloomFilter::~ScalableBloomFilter() = default;

bool ScalableBloomFilter::Contains(const Chain::List& list, const KeyHash& h) {
  // Newest to oldest, as RedisBloom: with EXPANSION >= 2 the newest layer
  // holds about half the items, so present items usually hit first.
  for (uint32_t i = list.size(); i-- > 0;) {
    if (list[i].cells->MayContain(h)) return true;
  }
  return false;
}

bool ScalableBloomFilter::MayContain(const KeyHash& h) const {
  return Contains(chain_.Load(), h);
}

FilterStatus ScalableBloomFilter::Add(const KeyHash& h, bool* added) {
  *added = false;
  const Chain::List* list = &chain_.Load();
  if (Contains(*list, h)) return FilterStatus::kOk;
  return chain_.InsertIntoNewest(&list, [&](Chain::Layer& newest) {
    if (newest.cells->Add(h)) {
      // Counted after the bits are in place; only adds that flipped a bit.
      newest.CountItems(1);
      *added = true;
    }
  });
}

void ScalableBloomFilter::ReplayAdd(const KeyHash& h, bool counted) {
  const Chain::List* list = &chain_.Load();
  Chain::Layer* newest = &list->newest();
  // Only a counted add fills a layer, so only it may need the next one; one
  // attempt is enough (a failed Grow leaves the list as it was).
  if (counted && scaling() && !newest->HasRoom() &&
      chain_.Grow(list, &list) == FilterStatus::kOk) {
    newest = &list->newest();
  }
  // Bits the item already has (a snapshot written while it was being added
  // holds them) are set again harmlessly.
  if (!Contains(*list, h)) newest->cells->Add(h);
  if (counted) newest->CountItems(1);
}

uint64_t ScalableBloomFilter::items() const { return chain_.item_sum(); }

std::vector<BloomLayerInfo> ScalableBloomFilter::Layers() const {
  return DescribeLayers<BloomLayerInfo>([](const Chain::Layer& layer) {
    return BloomLayerInfo{
        /*capacity=*/layer.capacity,
        /*items=*/layer.item_count(),
        /*bits=*/layer.cells->bits(),
        /*bytes=*/layer.cells->bytes(),
        /*probes=*/layer.cells->probes(),
        /*error_rate=*/layer.error_rate,
    };
  });
}

bool ScalableBloomFilter::OrLayersFrom(const ScalableBloomFilter& other) {
  const Chain::List& mine = chain_.Load();
  const Chain::List& theirs = other.chain_.Load();
  if (&other == this) return true;
  if (other.hash_seed() != hash_seed() || other.layout() != layout() ||
      mine.size() != theirs.size()) {
    return false;
  }
  for (uint32_t i = 0; i < mine.size(); ++i) {
    if (mine[i].cells->bits() != theirs[i].cells->bits() ||
        mine[i].cells->probes() != theirs[i].cells->probes()) {
      return false;
    }
  }
  for (uint32_t i = 0; i < mine.size(); ++i) {
    std::atomic<uint64_t>* to = mine[i].cells->mutable_words();
    const std::atomic<uint64_t>* from = theirs[i].cells->words();
    const uint64_t words = mine[i].cells->num_words();
    // Relaxed, as every bit access (blocked_bloom.h): the command's
    // exclusive key locks order this against every other access.
    for (uint64_t w = 0; w < words; ++w) {
      const uint64_t add = from[w].load(std::memory_order_relaxed);
      if (add != 0) to[w].fetch_or(add, std::memory_order_relaxed);
    }
  }
  return true;
}

void ScalableBloomFilter::SetLayerItems(uint32_t index, uint64_t items) {
  // Relaxed: a statistic (layer_chain.h's Layer::item_count).
  chain_.Load()[index].items.store(items, std::memory_order_relaxed);
}

}  // namespace bloomgate
