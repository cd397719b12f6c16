#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "filters/blocked_bloom.h"
#include "filters/bloom_layer.h"
#include "filters/bloom_math.h"
#include "filters/memory_refusal.h"
#include "filters/chained_filter.h"
#include "filters/filter_status.h"
#include "filters/key_hash.h"
#include "filters/layer_chain.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/redisbloom_layout.h"

namespace bloomgate {

// Which layer kind a filter's layers are (all of one kind per filter).
enum class BloomLayout : uint8_t {
  kBlocked,     // ours: BlockedBloom, XXH3-128 with the filter's seed
  kRedisBloom,  // imported from RedisBloom: ClassicBloom, its seedless hash
  // Ours at low error rates: ClassicBloom (kFastRange) sized as RedisBloom
  // sizes a layer (ChooseClassicBloomShape), XXH3-128 with the filter's seed.
  kClassic,
};

// The chain's block_cells for a layout: what tells the layer kinds apart.
constexpr uint32_t BloomLayoutCells(BloomLayout layout) {
  switch (layout) {
    case BloomLayout::kRedisBloom: return kRedisBloomWordBits;
    case BloomLayout::kClassic: return kClassicBloomGranuleBits;
    case BloomLayout::kBlocked: break;
  }
  return kBloomBlockBits;
}

// The layout a NEW filter gets (BF.RESERVE, BF.ADD/BF.INSERT creating one,
// bloomgate build): blocked while one 512-bit block per item pays, classic
// below that (bloom_math.h's ClassicBloomPays, judged on layer 0's rate:
// every later layer keeps layer 0's kind).
inline BloomLayout PreferredBloomLayout(double error_rate, uint32_t expansion,
                                       double tightening = kErrorTighteningRatio) {
  const double layer0 = expansion == 0 ? error_rate : error_rate * tightening;
  return ClassicBloomPays(layer0) ? BloomLayout::kClassic : BloomLayout::kBlocked;
}

struct ScalableBloomOptions {
  double error_rate = 0.01;  // RedisBloom's default bf-error-rate
  uint64_t capacity = 100;   // bf-initial-size
  uint32_t expansion = 2;    // bf-expansion-factor; 0 = NONSCALING
  // The item hash's seed (key_hash.h); unset: Create draws a fresh one with
  // NewHashSeed(). Set only to rebuild a known filter (tests, golden files).
  std::optional<uint64_t> hash_seed;
  // kRedisBloom: RedisBloom's layout and sizing (tests; imports use Restore).
  BloomLayout layout = BloomLayout::kBlocked;
  // valkey-bloom's TIGHTENING: layer 0 gets error_rate x this when scaling,
  // each later layer the one before's x this. (0, 1); a kRedisBloom filter
  // keeps RedisBloom's 0.5 whatever this says.
  double tightening = kErrorTighteningRatio;
};

// One layer, as BF.DEBUG / BF.INFO and the snapshot writer see it.
struct BloomLayerInfo {
  uint64_t capacity;  // items this layer was sized for
  uint64_t items;     // items for which this layer flipped at least one bit
  uint64_t bits;
  uint64_t bytes;  // of the bit array alone
  uint32_t probes;
  double error_rate;  // the FP rate this layer was sized for
};

// What LayerChain needs to know about a Bloom layer: a BloomLayer whose item
// count only grows. Blocks of 512 one-bit cells are our BlockedBloom
// (ChooseBlockedShape(p, n, 512) is ChooseBlockedBloomShape(p, n) exactly);
// "blocks" of one 64-bit word are RedisBloom's layout, sized as RedisBloom
// sizes a new link (redisbloom_layout.h), so a grown imported filter keeps
// answering BF.INFO as RedisBloom would.
struct BloomLayerTraits {
  using Cells = BloomLayer;
  using Count = uint64_t;
  static BlockedShape ChooseShape(double fp_rate, uint64_t capacity, uint32_t block_cells) {
    if (block_cells == kRedisBloomWordBits) return ChooseRedisBloomShape(fp_rate, capacity);
    if (block_cells == kClassicBloomGranuleBits) return ChooseClassicBloomShape(fp_rate, capacity);
    return ChooseBlockedShape(fp_rate, capacity, block_cells);
  }
  static uint64_t BytesFor(const BlockedShape& shape) { return BloomLayer::BytesFor(shape); }
  static std::unique_ptr<BloomLayer> Create(const BlockedShape& shape) {
    return BloomLayer::Create(shape);
  }
  static BloomLayer* CreateAt(void* at, const BlockedShape& shape, void* words) {
    return BloomLayer::CreateAt(at, shape, static_cast<std::atomic<uint64_t>*>(words));
  }
  // A blocked layer's bits as the chain keeps them inline (LayerProbeOf):
  // 24 bytes in the Layer's padding. words == nullptr: a classic layer,
  // probed through its BloomLayer.
  struct Probe {
    std::atomic<uint64_t>* words = nullptr;
    uint64_t num_blocks = 0;
    uint32_t probes = 0;
  };
  static Probe ProbeOf(BloomLayer& cells) {
    BlockedBloom* blocked = cells.blocked();
    if (blocked == nullptr) return Probe{};
    return Probe{blocked->mutable_words(), blocked->num_blocks(), blocked->probes()};
  }
};

// One layer as saved by a snapshot or a dump, for ScalableBloomFilter::Restore:
// what Layers() reports, less the byte count (derived from the bits). Its
// `cells` are the layer's bits: a whole number of 512-bit blocks, > 0,
// < kMaxBloomBits.
using BloomLayerShape = LayerShape<BloomLayerTraits::Count>;

// A scalable Bloom filter with RedisBloom's growth rule (sb.c):
//  - layer 0 has the requested capacity and error_rate * 0.5 when scaling
//    (error_rate * 1 when NONSCALING), so the sum over all layers
//    error_rate * (1/2 + 1/4 + ...) stays below error_rate;
//  - a layer is full when its item count >= its capacity; the next NEW item
//    (one no layer already reports) appends a layer with capacity x expansion
//    and half the error rate;
//  - Add checks every layer first, newest to oldest, and inserts nothing if
//    any says "present" (so a false positive "exists" is final); otherwise it
//    inserts into the newest layer. items() counts adds that flipped a bit.
//  - a full NONSCALING filter answers kFull for new items.
// Each layer is a BlockedBloom sized by ChooseBlockedBloomShape, so its
// measured FP rate stays at or under the layer's error rate.
//
// The layers, their growth, memory accounting and publication are a
// LayerChain (filters/layer_chain.h), with the accessors it answers in
// ChainedFilter (filters/chained_filter.h); this class decides what an item
// does.
//
// Concurrency: Add and MayContain run concurrently from any threads. Bit
// updates never lock; only growth (appending a layer) takes the chain's grow
// mutex, and adds/lookups on the existing layers continue meanwhile. The layer
// list is an immutable array published through an atomic pointer (see
// LayerChain's "Concurrency"). Two
// threads adding the same new item at the same moment may both report
// *added = true (each flipped a different bit), so items() can count it twice,
// and racing adds can push a layer a few items (at most one per racing
// Add, one pass of an AddBatch: see there) past its capacity before one of
// them grows the filter. No added item is ever lost.
class ScalableBloomFilter : public ChainedFilter<BloomLayerTraits> {
 public:
  // Validates options and checks every limit BEFORE allocating anything:
  //  - error_rate must be in (0, 1); values above kMaxBloomErrorRate are
  //    capped to it. capacity >= 1. expansion <= kMaxBloomExpansion.
  //    The caller validates these for its error texts; anything outside them
  //    (NaN, 0, capacity 0, ...) is refused here with kFilterMemoryLimit.
  //  - a first layer too large to exist at all (e.g. capacity UINT64_MAX), or
  //    larger than limits.max_filter_bytes -> kFilterMemoryLimit;
  //  - not enough room in *budget, or the allocation fails -> kOutOfMemory.
  // On failure nothing stays reserved and *out is reset. `budget` may be
  // nullptr (no shared cap); otherwise it must outlive the filter. `out` must
  // not be nullptr. Never throws. A memory refusal is described in *refusal
  // when given (filters/memory_refusal.h), as for growth below.
  static FilterStatus Create(const ScalableBloomOptions& options, const FilterLimits& limits,
                             MemoryBudget* budget, std::unique_ptr<ScalableBloomFilter>* out,
                             MemoryRefusal* refusal = nullptr);

  // For loaders (persistence/filter_codec.cc): a filter with exactly these
  // layers, oldest first, every bit zero and each layer's items() as given;
  // fill the bits through mutable_layer() before publishing the filter.
  // error_rate is the requested rate after the cap, (0, kMaxBloomErrorRate];
  // expansion <= kMaxBloomExpansion; 1..kMaxBloomLayers layers, exactly one
  // when expansion is 0; each layer within the ranges of BloomLayerShape.
  // Anything else -> kInvalidOptions. The whole filter's memory_bytes() (the
  // same figure the original had with these layers) is checked against
  // limits.max_filter_bytes (-> kFilterMemoryLimit) and reserved in *budget
  // (-> kOutOfMemory) before anything is allocated; failures leave nothing
  // reserved and *out reset. Never throws. Later growth follows `limits`.
  // hash_seed is the saved one (0 for filters saved before seeds existed);
  // tightening the saved ratio, in (0, 1) (else kInvalidOptions).
  static FilterStatus Restore(double error_rate, uint32_t expansion,
                              std::span<const BloomLayerShape> layers, const FilterLimits& limits,
                              MemoryBudget* budget, std::unique_ptr<ScalableBloomFilter>* out,
                              uint64_t hash_seed = 0, BloomLayout layout = BloomLayout::kBlocked,
                              double tightening = kErrorTighteningRatio);

  // Where a filter Create(options) would make could grow to under `limits`
  // (LayerChain::ProjectGrowth): valkey-bloom's VALIDATESCALETO, judged
  // before anything is allocated.
  static GrowthProjection ProjectGrowth(const ScalableBloomOptions& options,
                                        const FilterLimits& limits, uint64_t target);

  // Releases memory_bytes() back to the budget. No call may be running.
  ~ScalableBloomFilter();
  // The filter is the head of one line-aligned block with layer 0 (and,
  // under 1 MiB, its bits): LayerChain's FirstCells::kInOwnerBlock. Built
  // only there (ChainedFilter::Adopt), so `delete` frees that block.
  static constexpr bool kBuiltInOwnerBlock = true;
  static void operator delete(void* block) { Chain::FreeOwnerBlock(block); }

  ScalableBloomFilter(const ScalableBloomFilter&) = delete;
  ScalableBloomFilter& operator=(const ScalableBloomFilter&) = delete;

  // Adds the item. *added is true iff it was new (it flipped a bit); false if
  // some layer already (probably) contains it, or on any non-kOk status.
  // Statuses: kOk; kFull (NONSCALING and full); or, when a layer must be
  // appended, kTooManyLayers / kFilterMemoryLimit / kOutOfMemory, in which
  // case the filter is left exactly as it was and the item is not added.
  FilterStatus Add(const KeyHash& h, bool* added, MemoryRefusal* refusal = nullptr);

  // Re-applies an add that was acknowledged before (journal replay, and a
  // replica applying its primary's stream), so it is NEVER refused: the item
  // ends up present whatever the capacity or limits say now. `counted` is
  // what the original Add reported in *added, and items() grows by exactly
  // that, so BF.CARD comes back as it was. A full newest layer is grown as
  // Add would; if growth is refused (NONSCALING, kMaxBloomLayers, a memory
  // limit lowered since, or an order of items that fills a layer earlier
  // than it did live) the item goes into the newest layer past its capacity:
  // that layer's FP rate rises a little, but no acknowledged item is lost.
  void ReplayAdd(const KeyHash& h, bool counted);

  // Checks the layers newest to oldest and stops at the first hit. Never
  // blocks, not even while another thread grows the filter. With several
  // blocked layers, every layer's line is prefetched first, so a negative
  // lookup's L misses overlap instead of following one another.
  bool MayContain(const KeyHash& h) const;

  // Batches (BF.MEXISTS, BF.MADD): the same answers as one call per item in
  // order, in three phases per pass of at most BatchPassItems(layers) items
  // (the items are hashed by the caller): prefetch every item's line in
  // every layer, back to back, then probe item after item. out[i] /
  // added[i] for hashes[i].
  void MayContainBatch(std::span<const KeyHash> hashes, bool* out) const;
  // As Add for each item in order, stopping at the first non-kOk status
  // (that item is not added); *done is how many items were handled (their
  // added[] set). One probe pass per item: its masks for the newest layer
  // serve both the "already there?" check and the insert. An item's count
  // joins its layer's counter at the end of its pass, not one atomic add
  // per item (the batch's own fill check includes what it has not counted
  // yet, so a lone client's layers fill exactly as with Add); racing adders
  // may therefore push a layer past its capacity by up to one pass of items
  // each, rather than one item each.
  FilterStatus AddBatch(std::span<const KeyHash> hashes, bool* added, size_t* done,
                        MemoryRefusal* refusal = nullptr);
  // Items per pass for a filter of `layers` layers: kBatchPassLines lines
  // in flight at most (1 layer: 128 items, 16 layers: 8), at least 4 items.
  static constexpr size_t kBatchPassLines = 128;
  static size_t BatchPassItems(uint32_t layers) {
    return std::max<size_t>(4, kBatchPassLines / std::max<uint32_t>(layers, 1));
  }

  uint64_t items() const;  // items that flipped a bit (BF.CARD, BF.INFO items)
  // From ChainedFilter: capacity() (BF.INFO Capacity), num_layers() (BF.INFO
  // "Number of filters"), expansion(), scaling(), error_rate(),
  // memory_bytes() (BF.INFO Size, MEMORY USAGE), limits(), and layer(i) /
  // mutable_layer(i), the BlockedBloom of layer i.

  // Per-layer details, oldest first.
  std::vector<BloomLayerInfo> Layers() const;

  // The layer kind; a kRedisBloom filter grows RedisBloom-layout layers too
  // (same hash, same sizing rule), so it stays exportable to RedisBloom.
  BloomLayout layout() const {
    switch (block_cells()) {
      case kRedisBloomWordBits: return BloomLayout::kRedisBloom;
      case kClassicBloomGranuleBits: return BloomLayout::kClassic;
      default: return BloomLayout::kBlocked;
    }
  }
  // The item's hash for this filter's layers: XXH3 with the seed (ours) or
  // RedisBloom's seedless MurmurHash64A pair. Hides ChainedFilter::Hash.
  KeyHash Hash(std::string_view item) const {
    return layout() == BloomLayout::kRedisBloom ? RedisBloomHash(item) : ChainedFilter::Hash(item);
  }
  uint32_t block_cells() const { return chain_.block_cells(); }

  // BF.MERGE (server/commands/bloom/bloom_merge.h). Both need every Add and lookup
  // on this filter and on `other` stopped (the command holds their keys
  // exclusively), and `other` must hash alike (hash_seed) with the same
  // number of layers, each of the same bits and probes: the caller checks
  // and names the mismatch; here a mismatch is refused (false, nothing
  // changed) so bits can never be ORed into a differently shaped layer.
  // OrLayersFrom ORs each of other's layers into this filter's.
  bool OrLayersFrom(const ScalableBloomFilter& other);
  // Sets layer `index`'s item count (BF.CARD adds them up).
  void SetLayerItems(uint32_t index, uint64_t items);

 private:
  using ChainedFilter::ChainedFilter;  // for Adopt() alone (protected there)

  // Any layer says "present"; `prefetch`: first prefetch every layer's line
  // (false when a batch already did).
  static bool Contains(const Chain::List& list, const KeyHash& h, bool prefetch);
  static void PrefetchLayers(const Chain::List& list, const KeyHash& h);
  // One item of Add / AddBatch, *list the list to start from (updated when
  // it grows): *pending is what has been added to (*list)'s newest layer
  // and not counted yet, for the caller to count.
  FilterStatus AddOne(const Chain::List** list, const KeyHash& h, bool* added, uint64_t* pending,
                      bool prefetched, MemoryRefusal* refusal);
};

}  // namespace bloomgate
