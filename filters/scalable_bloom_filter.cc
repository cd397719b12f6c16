#include "filters/scalable_bloom_filter.h"

#include "filters/hash_seed.h"

#include <algorithm>
#include <new>
#include <utility>

namespace bloomgate {

FilterStatus ScalableBloomFilter::Create(const ScalableBloomOptions& options,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         std::unique_ptr<ScalableBloomFilter>* out,
                                         MemoryRefusal* refusal) {
  out->reset();
  // Out-of-range options are the caller's to reject with a proper text; here
  // they only must not produce a filter (no NaN, zero or > 32768 shapes that a
  // snapshot loader would refuse).
  if (!(options.error_rate > 0 && options.error_rate < 1) || options.capacity == 0 ||
      options.expansion > kMaxBloomExpansion || !IsTighteningRatio(options.tightening)) {
    return FilterStatus::kFilterMemoryLimit;
  }
  const double error_rate = std::min(options.error_rate, kMaxBloomErrorRate);
  const bool redisbloom = options.layout == BloomLayout::kRedisBloom;
  const double tightening = redisbloom ? kErrorTighteningRatio : options.tightening;
  Chain::Pending first;
  const FilterStatus status =
      Chain::Start(options.capacity,
                   Chain::FirstErrorRate(error_rate, options.expansion, tightening),
                   /*block_cells=*/BloomLayoutCells(options.layout),
                   /*owner_bytes=*/sizeof(ScalableBloomFilter),
                   limits, budget, &first, refusal, Chain::FirstCells::kInOwnerBlock);
  // RedisBloom's hash takes no seed: such a filter's seed stays 0.
  return Adopt(status, error_rate, options.expansion,
               redisbloom ? 0 : SeedOrNew(options.hash_seed),
               limits, &first, out, tightening);
}

FilterStatus ScalableBloomFilter::Restore(double error_rate, uint32_t expansion,
                                          std::span<const BloomLayerShape> layers,
                                          const FilterLimits& limits, MemoryBudget* budget,
                                          std::unique_ptr<ScalableBloomFilter>* out,
                                          uint64_t hash_seed, BloomLayout layout,
                                          double tightening) {
  out->reset();
  // The loader has already refused this with a precise text; here it only
  // must never produce a filter. The chain checks the rest the same way.
  if (!(error_rate > 0 && error_rate <= kMaxBloomErrorRate) || !IsTighteningRatio(tightening)) {
    return FilterStatus::kInvalidOptions;
  }
  Chain::Pending chain;
  const FilterStatus status =
      Chain::Restore(layers, expansion,
                     /*block_cells=*/BloomLayoutCells(layout),
                     /*owner_bytes=*/sizeof(ScalableBloomFilter), limits, budget, &chain,
                     Chain::FirstCells::kInOwnerBlock);
  return Adopt(status, error_rate, expansion, hash_seed, limits, &chain, out, tightening);
}

GrowthProjection ScalableBloomFilter::ProjectGrowth(const ScalableBloomOptions& options,
                                                    const FilterLimits& limits, uint64_t target) {
  const double error_rate = std::min(options.error_rate, kMaxBloomErrorRate);
  const double tightening =
      options.layout == BloomLayout::kRedisBloom ? kErrorTighteningRatio : options.tightening;
  return Chain::ProjectGrowth(/*layers=*/0, options.capacity,
                              Chain::FirstErrorRate(error_rate, options.expansion, tightening),
                              /*bytes=*/Chain::AccountedOwnerBytes(
                                  sizeof(ScalableBloomFilter), Chain::FirstCells::kInOwnerBlock),
                              /*capacity=*/0,
                              options.expansion, tightening, BloomLayoutCells(options.layout),
                              limits, target);
}

// Layer 0's cells live in this filter's block (Create, Restore): destroyed
// here, in place; the chain then gives memory_bytes() back to the budget and
// operator delete frees the block.
ScalableBloomFilter::~ScalableBloomFilter() { chain_.ReleaseFirstCells()->~BloomLayer(); }

// The header of the block is the filter, then layer 0's BloomLayer: three
// lines, with the bits from the fourth on.
static_assert(LayerChain<BloomLayerTraits>::OwnerBlockHeader(sizeof(ScalableBloomFilter)) == 192);

namespace {

using Probe = BloomLayerTraits::Probe;

std::atomic<uint64_t>* BlockOf(const Probe& probe, const KeyHash& h) {
  return BlockedBloom::BlockIn(probe.words, probe.num_blocks, h.hi);
}

}  // namespace

void ScalableBloomFilter::PrefetchLayers(const Chain::List& list, const KeyHash& h) {
  // Newest first, the order they are probed in. Read intent, all cache
  // levels (as BlockedBloom::Prefetch).
  for (uint32_t i = list.size(); i-- > 0;) {
    __builtin_prefetch(BlockOf(list[i].probe, h), /*rw=*/0, /*locality=*/3);
  }
}

bool ScalableBloomFilter::Contains(const Chain::List& list, const KeyHash& h, bool prefetch) {
  const uint32_t n = list.size();
  // Newest to oldest, as RedisBloom: with EXPANSION >= 2 the newest layer
  // holds about half the items, so present items usually hit first. All of
  // a filter's layers are one kind; classic (RedisBloom-layout) ones have no
  // inline probe and are asked through their BloomLayer.
  if (list[0].probe.words == nullptr) {
    for (uint32_t i = n; i-- > 0;) {
      if (list[i].cells->MayContain(h)) return true;
    }
    return false;
  }
  // One layer: nothing to overlap, the probe's own load is the miss.
  if (prefetch && n > 1) PrefetchLayers(list, h);
  for (uint32_t i = n; i-- > 0;) {
    const Probe& probe = list[i].probe;
    if (BlockedBloom::BlockMayContain(BlockOf(probe, h), h.lo, probe.probes)) return true;
  }
  return false;
}

bool ScalableBloomFilter::MayContain(const KeyHash& h) const {
  return Contains(chain_.Load(), h, /*prefetch=*/true);
}

void ScalableBloomFilter::MayContainBatch(std::span<const KeyHash> hashes, bool* out) const {
  size_t start = 0;
  while (start < hashes.size()) {
    const Chain::List& list = chain_.Load();
    const size_t end = std::min(hashes.size(), start + BatchPassItems(list.size()));
    if (list[0].probe.words != nullptr) {
      for (size_t i = start; i < end; ++i) PrefetchLayers(list, hashes[i]);
    }
    for (size_t i = start; i < end; ++i) out[i] = Contains(list, hashes[i], /*prefetch=*/false);
    start = end;
  }
}

FilterStatus ScalableBloomFilter::AddOne(const Chain::List** list, const KeyHash& h, bool* added,
                                         uint64_t* pending, bool prefetched,
                                         MemoryRefusal* refusal) {
  *added = false;
  const Chain::List& seen = **list;
  Chain::Layer* const newest = &seen.newest();
  // The newest layer's block and masks, computed once: they answer "is it
  // there?" for that layer and are what the insert sets (one probe pass).
  std::atomic<uint64_t>* block = nullptr;
  BlockedBloom::BlockMasks masks;
  if (newest->probe.words != nullptr) {
    const uint32_t n = seen.size();
    if (!prefetched && n > 1) PrefetchLayers(seen, h);
    block = BlockOf(newest->probe, h);
    masks = BlockedBloom::MasksFor(h.lo, newest->probe.probes);
    if (BlockedBloom::BlockHas(block, masks)) return FilterStatus::kOk;
    for (uint32_t i = n - 1; i-- > 0;) {
      const Probe& probe = seen[i].probe;
      if (BlockedBloom::BlockMayContain(BlockOf(probe, h), h.lo, probe.probes)) {
        return FilterStatus::kOk;
      }
    }
  } else if (Contains(seen, h, /*prefetch=*/false)) {
    return FilterStatus::kOk;
  }
  // New to every layer: LayerChain::InsertIntoNewest's loop, with the
  // batch's uncounted items in the fill check and counted before a growth
  // (whose new layer starts the count afresh).
  for (;;) {
    Chain::Layer& into = (*list)->newest();
    if (into.HasRoom(*pending)) {
      const bool flipped =
          &into == newest && block != nullptr ? BlockedBloom::BlockSet(block, masks)
                                              : into.cells->Add(h);
      // Only adds that flipped a bit count (counted by the caller, after the
      // bits are in place).
      if (flipped) {
        ++*pending;
        *added = true;
      }
      return FilterStatus::kOk;
    }
    if (*pending != 0) {
      into.CountItems(*pending);
      *pending = 0;
    }
    // Checked before Grow, which takes the mutex: a full NONSCALING filter
    // answers every new item without locking.
    if (!scaling()) return FilterStatus::kFull;
    // Either we append a layer or another thread already did; loop to
    // re-check the (new) newest layer, which may itself be full by now.
    const FilterStatus status = chain_.Grow(*list, list, refusal);
    if (status != FilterStatus::kOk) return status;
  }
}

FilterStatus ScalableBloomFilter::Add(const KeyHash& h, bool* added, MemoryRefusal* refusal) {
  const Chain::List* list = &chain_.Load();
  uint64_t pending = 0;
  const FilterStatus status = AddOne(&list, h, added, &pending, /*prefetched=*/false, refusal);
  if (pending != 0) list->newest().CountItems(pending);
  return status;
}

FilterStatus ScalableBloomFilter::AddBatch(std::span<const KeyHash> hashes, bool* added,
                                           size_t* done, MemoryRefusal* refusal) {
  *done = 0;
  size_t start = 0;
  while (start < hashes.size()) {
    const Chain::List* list = &chain_.Load();
    const size_t end = std::min(hashes.size(), start + BatchPassItems(list->size()));
    if (list->newest().probe.words != nullptr) {
      for (size_t i = start; i < end; ++i) PrefetchLayers(*list, hashes[i]);
    }
    uint64_t pending = 0;
    FilterStatus status = FilterStatus::kOk;
    size_t i = start;
    for (; i < end; ++i) {
      status = AddOne(&list, hashes[i], &added[i], &pending, /*prefetched=*/true, refusal);
      if (status != FilterStatus::kOk) break;
    }
    // One atomic add for the pass: with one thread adding, the counter's
    // line is no longer written 128 times; with several, it bounces once
    // per pass instead of once per item.
    if (pending != 0) list->newest().CountItems(pending);
    *done = i;
    if (status != FilterStatus::kOk) return status;
    start = end;
  }
  return FilterStatus::kOk;
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
  if (!Contains(*list, h, /*prefetch=*/true)) newest->cells->Add(h);
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
  chain_.Load()[index].SetItemCount(items);
}

}  // namespace bloomgate
