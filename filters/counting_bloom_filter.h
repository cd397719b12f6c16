#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "filters/blocked_counting_bloom.h"
#include "filters/bloom_math.h"
#include "filters/chained_filter.h"
#include "filters/filter_status.h"
#include "filters/key_hash.h"
#include "filters/layer_chain.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"

namespace bloomgate {

// Which kind a counting filter's layers are (all of one kind per filter; the
// chain's block_cells tells them apart: 128/64 blocked, 16/8 classic).
enum class CountingLayout : uint8_t {
  kBlocked,  // 128 4-bit or 64 8-bit counters per 64-byte block, one line per item
  kClassic,  // counters anywhere in the array (blocked_counting_bloom.h CLASSIC MODE)
};

// Below this layer-0 rate a new counting filter gets classic layers. Cells
// per key, large capacity (bloom_math.h's tables; classic = ChooseClassicShape):
//
//   layer rate   4-bit blocked   8-bit blocked   classic
//   5e-3            13.5            16.1           11.0
//   1e-4            ~33             ~52            ~19.5
//   1.2e-6           82.1           203            28.3
//   1.7e-20     2,423,553        saturated        94.7
//
// Above 1e-4 the blocked premium (1.2-2.7x) buys one cache line per operation
// instead of up to k (14 at 1e-4); below it the premium doubles about every
// two decades while the lines saved stay the same, so classic wins.
constexpr double kClassicCountingBelowErrorRate = 1e-4;

// The layout a NEW counting filter gets. Classic below
// kClassicCountingBelowErrorRate, and always with EXPANSION 1: there every
// layer has the first one's capacity while its rate halves, so 64 layers
// reach 2^-63 of layer 0's rate (5.4e-22 from CBF.RESERVE k 0.01 100), where
// 128-cell blocks would need ~10^7 cells per key -- 6,400 adds took 2.35 GB.
// With EXPANSION >= 2 layer i holds capacity x E^i items, so the deep layers
// only come after as many adds (layer 17 of a 100-item filter: 13 million),
// and the memory caps bound how deep a blocked filter can go; the blocked
// premium there is what the table says (4-bit: 3x at 1e-6).
inline CountingLayout PreferredCountingLayout(double error_rate, uint32_t expansion) {
  const double layer0 = expansion == 0 ? error_rate : error_rate * kErrorTighteningRatio;
  return expansion == 1 || layer0 < kClassicCountingBelowErrorRate ? CountingLayout::kClassic
                                                                   : CountingLayout::kBlocked;
}

// The chain's block_cells for a counter width and layout.
constexpr uint32_t CountingLayoutCells(uint32_t counter_bits, CountingLayout layout) {
  return layout == CountingLayout::kClassic ? BlockedCountingBloom::ClassicCellsFor(counter_bits)
                                            : BlockedCountingBloom::BlockCellsFor(counter_bits);
}

struct CountingBloomOptions {
  double error_rate = 0.01;  // as BF.*: RedisBloom's default bf-error-rate
  uint64_t capacity = 100;   // as BF.*: bf-initial-size
  uint32_t expansion = 2;    // as BF.*: 0 = NONSCALING
  uint32_t counter_bits = kCountingBloomNarrowCounterBits;  // 4 or 8 (COUNTERBITS)
  // The item hash's seed (key_hash.h); unset: Create draws a fresh one with
  // NewHashSeed(). Set only to rebuild a known filter (tests, golden files).
  std::optional<uint64_t> hash_seed;
  // Unset: PreferredCountingLayout(error_rate, expansion).
  std::optional<CountingLayout> layout;
};

// One layer, as CBF.INFO and a snapshot writer see it.
struct CountingBloomLayerInfo {
  uint64_t capacity;  // distinct items this layer was sized for
  uint64_t items;     // adds into this layer minus removes from it, clamped at 0
  uint64_t cells;     // counters
  uint64_t bytes;     // of the counter array alone
  uint32_t probes;
  double error_rate;  // the FP rate this layer was sized for
  uint64_t saturated_counters;
  // `items` before the clamp: below 0 only once THE RULE has been broken.
  // What a snapshot saves, so that items() survives a restore exactly.
  int64_t net_items;
};

// What LayerChain needs to know about a counting layer: a
// BlockedCountingBloom, whose block of 512 bits holds 128 4-bit or 64 8-bit
// counters (so the counter width is 512 / block_cells), and whose item count
// is a net count that deletes lower.
struct CountingBloomLayerTraits {
  using Cells = BlockedCountingBloom;
  using Count = int64_t;
  // What AddBatch reads of a layer, kept inline in its Layer (layer_chain.h's
  // LayerProbeOf, in padding: sizes unchanged), so a batch over L layers
  // reads L inline records instead of L cells objects.
  struct Probe {
    std::atomic<uint64_t>* words = nullptr;
    uint64_t num_blocks = 0;
    uint32_t probes = 0;
  };
  // words == nullptr: a classic layer, reached through its cells.
  static Probe ProbeOf(BlockedCountingBloom& cells) {
    if (cells.classic()) return Probe{};
    return Probe{cells.mutable_words(), cells.num_blocks(), cells.probes()};
  }
  static BlockedShape ChooseShape(double fp_rate, uint64_t capacity, uint32_t block_cells) {
    if (BlockedCountingBloom::IsClassicCells(block_cells)) {
      return ChooseClassicShape(fp_rate, capacity, block_cells);
    }
    return ChooseBlockedShape(fp_rate, capacity, block_cells);
  }
  static uint64_t BytesFor(const BlockedShape& shape) {
    return BlockedCountingBloom::BytesFor(shape);
  }
  static std::unique_ptr<BlockedCountingBloom> Create(const BlockedShape& shape) {
    return BlockedCountingBloom::Create(
        shape, BlockedCountingBloom::CounterBitsForCells(shape.block_cells));
  }
};

// One layer as saved by a snapshot or a dump, for CountingBloomFilter::Restore:
// `items` is the layer's net_items; `cells` a whole number of blocks, > 0,
// < MaxBlockedCells(block cells).
using CountingBloomLayerShape = LayerShape<CountingBloomLayerTraits::Count>;

// A scalable counting Bloom filter (our CBF.* family): ScalableBloomFilter's
// layers and growth rule, with each layer a BlockedCountingBloom so that items
// can be deleted and counted. The layers, growth, memory accounting and
// publication are a LayerChain (filters/layer_chain.h), with the accessors it
// answers in ChainedFilter (filters/chained_filter.h), as in
// ScalableBloomFilter; this class decides which layer an item lives in.
//
// Layers and growth (RedisBloom's sb.c rule, as ScalableBloomFilter):
//  - layer 0 has the requested capacity and error_rate * 0.5 when scaling
//    (error_rate * 1 when NONSCALING); each new layer has capacity x expansion
//    and half the error rate of the one before, so the sum stays below
//    error_rate. At most kMaxBloomLayers layers.
//  - New items go into the newest layer; when its own net count (see items())
//    is >= its capacity, the next new item first appends a layer. A full
//    NONSCALING filter answers kFull for new items (repeat adds still count).
//  - Each layer is sized by ChooseBlockedShape for 128-cell (4-bit) or 64-cell
//    (8-bit) blocks, so its measured FP rate stays at or under its error rate.
//
// Which layer an item lives in: Add of an item that some layer already reports
// increments the OLDEST layer that reports it; Remove decrements the OLDEST
// layer that reports it ("oldest", not "newest": only that keeps deletes
// exact). Why: a layer that is no longer the newest
// only ever receives increments of items it already reports -- which set no
// new cell -- and decrements, so the set of non-zero cells of an older layer
// never grows. An item first added into layer H was absent from every older
// layer then, so no older layer can ever report it: H is the oldest layer that
// reports it for as long as it is there, and every repeat add and every remove
// goes to H. With "newest", an item of layer H that is a false positive in a
// newer layer N (probability ~ N's error rate per remove) would be decremented
// in N instead: it stays in H, and N's counters lose a count that belongs to
// other items, which can make them false negatives. Measured on random mixes
// of adds, repeat adds and removes of added items (3M operations, 9 layers,
// ~450k live items, 4 runs): "newest" lost a live item 4-10 times per run,
// "oldest" never.
//
// THE RULE: only items that were added may be removed (and no more often than
// they were added). Removing an item that was never added, but which the
// filter reports because of other items' counters (a false positive),
// decrements counters that belong to those other items: a counter that drops
// to 0 makes every item using it a false negative. Nothing can detect this:
// it looks exactly like removing an added item. Saturated counters are never
// decremented, so overflow alone never causes a false negative.
//
// items(): the net number of occurrences,
//   (Adds that returned kOk) - (Removes that returned true),
// clamped at 0 -- the multiset's size, as CF.* counts copies. An item added
// three times counts three until it is removed three times; with one Add per
// distinct item it is the number of distinct items present. It is exact (no
// drift, whatever the false positives) as long as THE RULE is kept; each
// removal of a never-added item makes it one too small. A layer's own count
// (adds into it minus removes from it) decides when it is full, so repeat
// adds of hot items make a filter grow earlier than its distinct items need
// (more memory, never a higher FP rate).
// Why not "adds that returned *was_new minus removes that emptied the item":
// an item added while it is a false positive counts 0, but its last remove can
// still empty a counter (once the items it collided with are gone) and count
// -1. Measured with 8 threads adding 160k items and removing them again, that
// drifted 9% below the truth, without bound over time.
//
// Concurrency: Add, AddBatch (with CounterWrites::kShared), Remove,
// MayContain and Count run concurrently from any threads; AddBatch with
// kExclusive only beside readers (see CounterWrites). Counter updates never lock: each word of an item's block is
// updated with one compare-and-swap loop, so concurrent adds and removes from
// many threads never lose or double an update to any counter (every counter
// receives each of its increments and decrements exactly once, in one order
// per word; without saturation the result is the same as any serial order's).
// Only growth takes the chain's grow mutex; the layer list is an immutable array
// published through an atomic pointer, as in ScalableBloomFilter, so lookups
// never block. What is not atomic is an item's change across its words: an
// Add and a racing Remove of the same item can each see it half-updated, and
// two racing first Adds of one item may both return *was_new = true (its
// counters then hold exactly 2, and items() counts 2). Racing new items can
// push a layer past its capacity by at most one item per racing thread, as
// in ScalableBloomFilter; such a late insert into a layer that has just
// stopped being the newest is the one way an older layer's cells can still
// grow, so the "oldest layer" argument above holds except in that window.
class CountingBloomFilter : public ChainedFilter<CountingBloomLayerTraits> {
 public:
  // Validates options and checks every limit BEFORE allocating anything:
  //  - error_rate in (0, 1) (values above kMaxBloomErrorRate are capped to
  //    it), capacity >= 1, expansion <= kMaxBloomExpansion, counter_bits 4 or
  //    8; anything else -> kInvalidOptions;
  //  - a first layer too large to exist at all, or larger than
  //    limits.max_filter_bytes -> kFilterMemoryLimit;
  //  - not enough room in *budget, or the allocation fails -> kOutOfMemory.
  // On failure nothing stays reserved and *out is reset. `budget` may be
  // nullptr; otherwise it must outlive the filter. Never throws. A memory
  // refusal is described in *refusal when given, as for growth below.
  static FilterStatus Create(const CountingBloomOptions& options, const FilterLimits& limits,
                             MemoryBudget* budget, std::unique_ptr<CountingBloomFilter>* out,
                             MemoryRefusal* refusal = nullptr);

  // For loaders (persistence/filter_codec.cc): a filter with exactly these
  // layers, oldest first, every counter zero and each layer's net item count
  // as given; fill the counters through mutable_layer() (then
  // RecountSaturated() on each layer) before publishing the filter.
  // error_rate is the requested rate after the cap, (0, kMaxBloomErrorRate];
  // expansion <= kMaxBloomExpansion; counter_bits 4 or 8; 1..kMaxBloomLayers
  // layers, exactly one when expansion is 0, each within the ranges of
  // CountingBloomLayerShape for BlockCellsFor(counter_bits)-cell blocks.
  // Anything else -> kInvalidOptions. The whole memory_bytes() (what the
  // original had with these layers) is checked against
  // limits.max_filter_bytes (-> kFilterMemoryLimit) and reserved in *budget
  // (-> kOutOfMemory) before anything is allocated; failures leave nothing
  // reserved and *out reset. Never throws. Later growth follows `limits`.
  static FilterStatus Restore(double error_rate, uint32_t expansion, uint32_t counter_bits,
                              std::span<const CountingBloomLayerShape> layers,
                              const FilterLimits& limits, MemoryBudget* budget,
                              std::unique_ptr<CountingBloomFilter>* out, uint64_t hash_seed = 0,
                              CountingLayout layout = CountingLayout::kBlocked);

  // Releases memory_bytes() back to the budget. No call may be running.
  ~CountingBloomFilter();

  CountingBloomFilter(const CountingBloomFilter&) = delete;
  CountingBloomFilter& operator=(const CountingBloomFilter&) = delete;

  // Adds one occurrence of the item. If some layer already reports it, its
  // counters in the oldest such layer are incremented and *was_new = false.
  // Otherwise it is inserted into the newest layer (appending a layer first if
  // that one is full) and *was_new = true. Statuses: kOk; kFull (NONSCALING,
  // full, and the item is new); or, when a layer must be appended,
  // kTooManyLayers / kFilterMemoryLimit / kOutOfMemory, in which case nothing
  // changed. *was_new is false on any status but kOk.
  FilterStatus Add(const KeyHash& h, bool* was_new, MemoryRefusal* refusal = nullptr);

  // CBF.MADD: as Add for each item in order, stopping at the first non-kOk
  // status (that item is not added); *done is how many items were handled
  // (their was_new[] set), so was_new[i] and the counters come out exactly as
  // from Add(hashes[i]) one after the other. In passes of at most
  // BatchPassItems(layers) items (hashed by the caller): every item's block
  // in every layer is prefetched back to back, then each item takes one pass
  // whose gathered cells both find the oldest layer reporting it and are what
  // the increment adds there (or in the newest layer, for a new item). What a
  // pass put into each layer joins that layer's item count once, at the end
  // of the pass or before a growth, not one atomic add per item; the fill
  // check includes what the pass has not counted yet, so a lone writer's
  // layers fill and grow exactly as with Add, while racing adders may push a
  // layer past its capacity by up to one pass of items each. `writes`: see
  // CounterWrites (blocked_counting_bloom.h); kExclusive only for a caller
  // that no other Add, AddBatch or Remove of this filter can run beside.
  FilterStatus AddBatch(std::span<const KeyHash> hashes, bool* was_new, size_t* done,
                        CounterWrites writes = CounterWrites::kShared,
                        MemoryRefusal* refusal = nullptr);
  // Items per pass for a filter of `layers` layers: kBatchPassLines lines in
  // flight at most (1 layer: 128 items, 16 layers: 8), at least 4 items; as
  // ScalableBloomFilter's batches.
  static constexpr size_t kBatchPassLines = 128;
  static size_t BatchPassItems(uint32_t layers) {
    return std::max<size_t>(4, kBatchPassLines / std::max<uint32_t>(layers, 1));
  }

  // Removes one occurrence: decrements the item's counters in the oldest layer
  // that reports it and returns true; returns false, changing nothing, if no
  // layer reports it. See THE RULE above.
  bool Remove(const KeyHash& h);

  // True if some layer reports the item (all its counters there non-zero).
  // No false negatives while THE RULE is kept. Never blocks.
  bool MayContain(const KeyHash& h) const;
  // Prefetches the item's block in every layer (for batches: hash every
  // item, prefetch them all, then Add / MayContain each).
  void Prefetch(const KeyHash& h) const;

  // Sum over the layers of the item's smallest counter in that layer: 0 iff
  // !MayContain(h); otherwise an upper bound on its adds minus its removes
  // (other items' counts and false positives only add to it), unless the
  // item's counters are saturated, where the true count may be higher.
  uint64_t Count(const KeyHash& h) const;

  uint64_t items() const;  // adds minus removes, defined above (CBF.CARD)
  uint32_t counter_bits() const {  // 4 or 8
    return BlockedCountingBloom::CounterBitsForCells(chain_.block_cells());
  }
  CountingLayout layout() const {
    return BlockedCountingBloom::IsClassicCells(chain_.block_cells()) ? CountingLayout::kClassic
                                                                      : CountingLayout::kBlocked;
  }
  // Every layer's shape block_cells (what a snapshot saves per layer):
  // CountingLayoutCells(counter_bits(), layout()).
  uint32_t layer_block_cells() const { return chain_.block_cells(); }
  uint64_t max_count() const { return (uint64_t{1} << counter_bits()) - 1; }  // 15 or 255
  uint64_t saturated_counters() const;  // over all layers
  // From ChainedFilter: capacity(), num_layers() (CBF.INFO "Number of
  // filters"), expansion(), scaling(), error_rate(), memory_bytes() (CBF.INFO
  // Size, MEMORY USAGE), limits(), and layer(i) / mutable_layer(i), the
  // BlockedCountingBloom of layer i (a loader calls RecountSaturated() on it
  // after filling its words).

  // Per-layer details, oldest first.
  std::vector<CountingBloomLayerInfo> Layers() const;

  // CBF.MERGE (server/commands/bloom/bloom_merge.h): adds each of other's layers'
  // counters into this filter's, saturating at max_count() (a saturated
  // counter then stays, as after any overflow: no false negative), and
  // their net item counts into this filter's. Both filters must be quiet
  // (the command holds their keys exclusively); other must hash alike with
  // the same counter width and layer shapes, else false and nothing changed.
  bool AddCountersFrom(const CountingBloomFilter& other);

 private:
  using ChainedFilter::ChainedFilter;  // for Adopt() alone (protected there)

  // The oldest layer of `list` that reports the item, or nullptr.
  static Chain::Layer* OldestHolder(const Chain::List& list, const KeyHash& h);

  // AddBatch's parts (counting_bloom_filter.cc): the pass's uncounted items
  // per layer; the batch for one counter width and write mode; one item of
  // it, *list the list to start from (updated when it grows).
  struct PassCounts;
  template <uint32_t kBits, CounterWrites kWrites>
  FilterStatus AddBatchImpl(std::span<const KeyHash> hashes, bool* was_new, size_t* done,
                            MemoryRefusal* refusal);
  template <uint32_t kBits, CounterWrites kWrites>
  FilterStatus AddOne(const Chain::List** list, const KeyHash& h, bool* was_new,
                      PassCounts* pending, MemoryRefusal* refusal);
  static void PrefetchLayers(const Chain::List& list, const KeyHash& h);
  // A pass of an exclusive batch into a filter of one layer with room for
  // all of it: the items' counters only (the caller counts the items).
  template <uint32_t kBits>
  static void AddPassToOnlyLayer(Chain::Layer& layer, std::span<const KeyHash> hashes,
                                 bool* was_new);
};

}  // namespace bloomgate
