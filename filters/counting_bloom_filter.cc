#include "filters/counting_bloom_filter.h"

#include "filters/hash_seed.h"

#include <algorithm>
#include <new>
#include <utility>

#include "filters/memory_reservation.h"

namespace bloomgate {
namespace {

bool IsCounterWidth(uint32_t counter_bits) {
  return counter_bits == kCountingBloomNarrowCounterBits ||
         counter_bits == kCountingBloomWideCounterBits;
}

}  // namespace

FilterStatus CountingBloomFilter::Create(const CountingBloomOptions& options,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         std::unique_ptr<CountingBloomFilter>* out,
                                         MemoryRefusal* refusal) {
  out->reset();
  if (!(options.error_rate > 0 && options.error_rate < 1) || options.capacity == 0 ||
      options.expansion > kMaxBloomExpansion || !IsCounterWidth(options.counter_bits)) {
    return FilterStatus::kInvalidOptions;
  }
  const double error_rate = std::min(options.error_rate, kMaxBloomErrorRate);
  Chain::Pending first;
  const FilterStatus status =
      Chain::Start(options.capacity, Chain::FirstErrorRate(error_rate, options.expansion),
                   CountingLayoutCells(options.counter_bits,
                                       options.layout.value_or(PreferredCountingLayout(
                                           error_rate, options.expansion))),
                   /*owner_bytes=*/sizeof(CountingBloomFilter), limits, budget, &first,
                   refusal);
  return Adopt(status, error_rate, options.expansion, SeedOrNew(options.hash_seed),
               limits, &first, out);
}

FilterStatus CountingBloomFilter::Restore(double error_rate, uint32_t expansion,
                                          uint32_t counter_bits,
                                          std::span<const CountingBloomLayerShape> layers,
                                          const FilterLimits& limits, MemoryBudget* budget,
                                          std::unique_ptr<CountingBloomFilter>* out,
                                          uint64_t hash_seed, CountingLayout layout) {
  out->reset();
  // The loader has already refused these with precise texts; here they only
  // must never produce a filter. The chain checks the rest the same way.
  if (!(error_rate > 0 && error_rate <= kMaxBloomErrorRate) || !IsCounterWidth(counter_bits)) {
    return FilterStatus::kInvalidOptions;
  }
  Chain::Pending chain;
  const FilterStatus status = Chain::Restore(
      layers, expansion, CountingLayoutCells(counter_bits, layout),
      /*owner_bytes=*/sizeof(CountingBloomFilter), limits, budget, &chain);
  return Adopt(status, error_rate, expansion, hash_seed, limits, &chain, out);
}

// The chain gives memory_bytes() back to the budget.
CountingBloomFilter::~CountingBloomFilter() = default;

CountingBloomFilter::Chain::Layer* CountingBloomFilter::OldestHolder(const Chain::List& list,
                                                                     const KeyHash& h) {
  // Oldest first (see the header: the oldest layer reporting an item is the
  // one that holds it). A miss costs one cache line per layer either way.
  for (uint32_t i = 0; i < list.size(); ++i) {
    if (list[i].cells->MayContain(h)) return &list[i];
  }
  return nullptr;
}

bool CountingBloomFilter::MayContain(const KeyHash& h) const {
  const Chain::List& list = chain_.Load();
  // Newest first, as ScalableBloomFilter: with EXPANSION >= 2 the newest layer
  // holds about half the items. Any order gives the same answer.
  for (uint32_t i = list.size(); i-- > 0;) {
    if (list[i].cells->MayContain(h)) return true;
  }
  return false;
}

void CountingBloomFilter::Prefetch(const KeyHash& h) const {
  const Chain::List& list = chain_.Load();
  for (uint32_t i = 0; i < list.size(); ++i) list[i].cells->Prefetch(h);
}

uint64_t CountingBloomFilter::Count(const KeyHash& h) const {
  const Chain::List& list = chain_.Load();
  uint64_t total = 0;
  for (uint32_t i = 0; i < list.size(); ++i) {
    total = internal::SaturatingAdd(total, list[i].cells->MinCounter(h));
  }
  return total;
}

FilterStatus CountingBloomFilter::Add(const KeyHash& h, bool* was_new, MemoryRefusal* refusal) {
  *was_new = false;
  const Chain::List* list = &chain_.Load();
  if (Chain::Layer* holder = OldestHolder(*list, h); holder != nullptr) {
    holder->cells->Increment(h);
    holder->CountItems(1);  // after the counters are in place
    return FilterStatus::kOk;
  }
  return chain_.InsertIntoNewest(&list, [&](Chain::Layer& newest) {
    newest.cells->Increment(h);
    newest.CountItems(1);
    *was_new = true;
  }, refusal);
}

namespace {

using Probe = CountingBloomLayerTraits::Probe;

std::atomic<uint64_t>* BlockOf(const Probe& probe, const KeyHash& h) {
  return BlockedCountingBloom::BlockIn(probe.words, probe.num_blocks, h.hi);
}

}  // namespace

// Per layer (by index, which growth never changes: layers are only appended),
// the items a pass has put in and not counted yet. 64 layers at most: 512
// bytes on the stack, zeroed per batch, not per pass (Flush leaves zeros).
struct CountingBloomFilter::PassCounts {
  int64_t pending[kMaxBloomLayers] = {};
  uint32_t used = 0;  // layers [0, used) may hold a non-zero count

  void Add(uint32_t layer) {
    ++pending[layer];
    used = std::max(used, layer + 1);
  }
  // Into the layers' counters, after the counters themselves are in place.
  void Flush(const Chain::List& list) {
    for (uint32_t i = 0; i < used; ++i) {
      if (pending[i] != 0) list[i].CountItems(pending[i]);
      pending[i] = 0;
    }
    used = 0;
  }
};

void CountingBloomFilter::PrefetchLayers(const Chain::List& list, const KeyHash& h) {
  // Oldest first, the order AddOne asks them in. Write intent: the item's
  // counters are incremented in one of them. Keep in all levels (locality 3).
  for (uint32_t i = 0; i < list.size(); ++i) {
    __builtin_prefetch(BlockOf(list[i].probe, h), /*rw=*/1, /*locality=*/3);
  }
}

template <uint32_t kBits, CounterWrites kWrites>
FilterStatus CountingBloomFilter::AddOne(const Chain::List** list, const KeyHash& h,
                                         bool* was_new, PassCounts* pending,
                                         MemoryRefusal* refusal) {
  constexpr bool kExclusive = kWrites == CounterWrites::kExclusive;
  *was_new = false;
  internal::ProbeCells<kBits> cells(h.lo);
  // The layer whose block was read last, if no counter of that block was at
  // half its max or more: an exclusive writer then increments it with plain
  // adds (BlockIncrementBelowHalf), nothing having written it since.
  const Chain::Layer* below_half = nullptr;
  const auto increment = [&](Chain::Layer& layer) {
    const Probe& probe = layer.probe;
    const internal::CellMasks& masks = cells.For(probe.probes);
    if (kExclusive && &layer == below_half) {
      BlockedCountingBloom::BlockIncrementBelowHalf(BlockOf(probe, h), masks);
      return;
    }
    const uint64_t saturated =
        BlockedCountingBloom::BlockIncrement<kBits, kWrites>(BlockOf(probe, h), masks);
    if (saturated != 0) layer.cells->NoteSaturated(saturated);
  };
  // The oldest layer that reports the item holds it (see the header), as in
  // Add's OldestHolder; its masks are gathered once, extended per layer.
  const Chain::List& seen = **list;
  for (uint32_t i = 0; i < seen.size(); ++i) {
    const Probe& probe = seen[i].probe;
    const internal::CellMasks& masks = cells.For(probe.probes);
    bool has;
    if constexpr (kExclusive) {
      const BlockedCountingBloom::BlockReading read =
          BlockedCountingBloom::ReadBlock<kBits>(BlockOf(probe, h), masks);
      has = read.has;
      below_half = read.below_half ? &seen[i] : nullptr;
    } else {
      has = BlockedCountingBloom::BlockHas<kBits>(BlockOf(probe, h), masks);
    }
    if (has) {
      increment(seen[i]);
      pending->Add(i);
      return FilterStatus::kOk;
    }
  }
  // New to every layer: LayerChain::InsertIntoNewest's loop, with the pass's
  // uncounted items in the fill check and counted before a growth (a layer
  // it appends was not read: below_half names none of its layers).
  for (;;) {
    const uint32_t newest = (*list)->size() - 1;
    Chain::Layer& into = (*list)->newest();
    if (into.HasRoom(pending->pending[newest])) {
      increment(into);
      pending->Add(newest);
      *was_new = true;
      return FilterStatus::kOk;
    }
    pending->Flush(**list);
    // Checked before Grow, which takes the mutex: a full NONSCALING filter
    // answers every new item without locking.
    if (!scaling()) return FilterStatus::kFull;
    // Either we append a layer or another thread already did; loop to
    // re-check the (new) newest layer, which may itself be full by now.
    if (const FilterStatus status = chain_.Grow(*list, list, refusal);
        status != FilterStatus::kOk) {
      return status;
    }
  }
}

template <uint32_t kBits>
void CountingBloomFilter::AddPassToOnlyLayer(Chain::Layer& layer, std::span<const KeyHash> hashes,
                                             bool* was_new) {
  const Probe& probe = layer.probe;
  uint64_t saturated = 0;
  for (size_t i = 0; i < hashes.size(); ++i) {
    internal::ProbeCells<kBits> cells(hashes[i].lo);
    const internal::CellMasks& masks = cells.For(probe.probes);
    std::atomic<uint64_t>* block = BlockOf(probe, hashes[i]);
    const BlockedCountingBloom::BlockReading read =
        BlockedCountingBloom::ReadBlock<kBits>(block, masks);
    was_new[i] = !read.has;
    if (read.below_half) {
      BlockedCountingBloom::BlockIncrementBelowHalf(block, masks);
    } else {
      saturated += BlockedCountingBloom::BlockIncrement<kBits, CounterWrites::kExclusive>(block,
                                                                                         masks);
    }
  }
  if (saturated != 0) layer.cells->NoteSaturated(saturated);
}

template <uint32_t kBits, CounterWrites kWrites>
FilterStatus CountingBloomFilter::AddBatchImpl(std::span<const KeyHash> hashes, bool* was_new,
                                               size_t* done, MemoryRefusal* refusal) {
  *done = 0;
  PassCounts pending;
  size_t start = 0;
  while (start < hashes.size()) {
    const Chain::List* list = &chain_.Load();
    const size_t end = std::min(hashes.size(), start + BatchPassItems(list->size()));
    for (size_t i = start; i < end; ++i) PrefetchLayers(*list, hashes[i]);
    // The common case, a filter that has not grown: every item of the pass
    // goes to its one layer, held or new, and each counts in its fill. With
    // room for the whole pass no item's fill check can fail, so it is made
    // once here, and the pass runs without AddOne's layer walk, growth loop
    // and per-item counts: ~70 of the ~280 instructions of an item's add.
    if constexpr (kWrites == CounterWrites::kExclusive) {
      const int64_t pass = static_cast<int64_t>(end - start);
      if (list->size() == 1 && (*list)[0].HasRoom(pass - 1)) {
        AddPassToOnlyLayer<kBits>((*list)[0], hashes.subspan(start, end - start),
                                  was_new + start);
        (*list)[0].CountItems(pass);
        *done = end;
        start = end;
        continue;
      }
    }
    FilterStatus status = FilterStatus::kOk;
    size_t i = start;
    for (; i < end; ++i) {
      status = AddOne<kBits, kWrites>(&list, hashes[i], &was_new[i], &pending, refusal);
      if (status != FilterStatus::kOk) break;
    }
    // One atomic add per layer touched in the pass instead of one per item:
    // the counter's line is written once per pass (one layer: 128 items).
    pending.Flush(*list);
    *done = i;
    if (status != FilterStatus::kOk) return status;
    start = end;
  }
  return FilterStatus::kOk;
}

FilterStatus CountingBloomFilter::AddBatch(std::span<const KeyHash> hashes, bool* was_new,
                                           size_t* done, CounterWrites writes,
                                           MemoryRefusal* refusal) {
  if (layout() == CountingLayout::kClassic) {
    // Classic layers have no inline block to gather: Add one item at a time,
    // which is the same filter, item for item (AddBatch's contract).
    *done = 0;
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (FilterStatus status = Add(hashes[i], &was_new[i], refusal);
          status != FilterStatus::kOk) {
        return status;
      }
      *done = i + 1;
    }
    return FilterStatus::kOk;
  }
  constexpr uint32_t kNarrow = kCountingBloomNarrowCounterBits;
  constexpr uint32_t kWide = kCountingBloomWideCounterBits;
  const bool narrow = counter_bits() == kNarrow;
  if (writes == CounterWrites::kExclusive) {
    return narrow ? AddBatchImpl<kNarrow, CounterWrites::kExclusive>(hashes, was_new, done, refusal)
                  : AddBatchImpl<kWide, CounterWrites::kExclusive>(hashes, was_new, done, refusal);
  }
  return narrow ? AddBatchImpl<kNarrow, CounterWrites::kShared>(hashes, was_new, done, refusal)
                : AddBatchImpl<kWide, CounterWrites::kShared>(hashes, was_new, done, refusal);
}

bool CountingBloomFilter::Remove(const KeyHash& h) {
  Chain::Layer* holder = OldestHolder(chain_.Load(), h);
  if (holder == nullptr) return false;
  holder->cells->Decrement(h);
  holder->CountItems(-1);
  return true;
}

uint64_t CountingBloomFilter::items() const {
  const int64_t total = chain_.item_sum();
  return total < 0 ? 0 : static_cast<uint64_t>(total);
}

uint64_t CountingBloomFilter::saturated_counters() const {
  const Chain::List& list = chain_.Load();
  uint64_t total = 0;
  for (uint32_t i = 0; i < list.size(); ++i) total += list[i].cells->saturated_counters();
  return total;
}

std::vector<CountingBloomLayerInfo> CountingBloomFilter::Layers() const {
  return DescribeLayers<CountingBloomLayerInfo>([](const Chain::Layer& layer) {
    const int64_t items = layer.item_count();
    return CountingBloomLayerInfo{
        /*capacity=*/layer.capacity,
        /*items=*/items < 0 ? 0 : static_cast<uint64_t>(items),
        /*cells=*/layer.cells->cells(),
        /*bytes=*/layer.cells->bytes(),
        /*probes=*/layer.cells->probes(),
        /*error_rate=*/layer.error_rate,
        /*saturated_counters=*/layer.cells->saturated_counters(),
        /*net_items=*/items,
    };
  });
}

namespace {

// Lane-wise a + b, each lane of `bits` bits capped at its maximum.
uint64_t SaturatingLaneAdd(uint64_t a, uint64_t b, uint32_t bits) {
  if (b == 0) return a;
  const uint64_t max = (uint64_t{1} << bits) - 1;
  uint64_t out = 0;
  for (uint32_t shift = 0; shift < 64; shift += bits) {
    const uint64_t sum = ((a >> shift) & max) + ((b >> shift) & max);
    out |= std::min(sum, max) << shift;
  }
  return out;
}

}  // namespace

bool CountingBloomFilter::AddCountersFrom(const CountingBloomFilter& other) {
  if (&other == this) return false;  // the caller merges a filter with itself once
  const Chain::List& mine = chain_.Load();
  const Chain::List& theirs = other.chain_.Load();
  if (other.hash_seed() != hash_seed() || other.counter_bits() != counter_bits() ||
      other.layout() != layout() ||
      mine.size() != theirs.size()) {
    return false;
  }
  for (uint32_t i = 0; i < mine.size(); ++i) {
    if (mine[i].cells->cells() != theirs[i].cells->cells() ||
        mine[i].cells->probes() != theirs[i].cells->probes()) {
      return false;
    }
  }
  const uint32_t bits = counter_bits();
  for (uint32_t i = 0; i < mine.size(); ++i) {
    BlockedCountingBloom& to = *mine[i].cells;
    const BlockedCountingBloom& from = *theirs[i].cells;
    std::atomic<uint64_t>* out = to.mutable_words();
    const std::atomic<uint64_t>* in = from.words();
    // Relaxed: the command's exclusive key locks order this against every
    // other access (see blocked_counting_bloom.h for the word layout).
    for (uint64_t w = 0; w < to.num_words(); ++w) {
      const uint64_t add = in[w].load(std::memory_order_relaxed);
      if (add == 0) continue;
      out[w].store(SaturatingLaneAdd(out[w].load(std::memory_order_relaxed), add, bits),
                   std::memory_order_relaxed);
    }
    to.RecountSaturated();
    mine[i].CountItems(theirs[i].item_count());
  }
  return true;
}

}  // namespace bloomgate
