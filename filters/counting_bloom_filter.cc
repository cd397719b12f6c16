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
                                         std::unique_ptr<CountingBloomFilter>* out) {
  out->reset();
  if (!(options.error_rate > 0 && options.error_rate < 1) || options.capacity == 0 ||
      options.expansion > kMaxBloomExpansion || !IsCounterWidth(options.counter_bits)) {
    return FilterStatus::kInvalidOptions;
  }
  const double error_rate = std::min(options.error_rate, kMaxBloomErrorRate);
  Chain::Pending first;
  const FilterStatus status =
      Chain::Start(options.capacity, Chain::FirstErrorRate(error_rate, options.expansion),
                   BlockedCountingBloom::BlockCellsFor(options.counter_bits),
                   /*owner_bytes=*/sizeof(CountingBloomFilter), limits, budget, &first);
  return Adopt(status, error_rate, options.expansion, SeedOrNew(options.hash_seed),
               limits, &first, out);
}

FilterStatus CountingBloomFilter::Restore(double error_rate, uint32_t expansion,
                                          uint32_t counter_bits,
                                          std::span<const CountingBloomLayerShape> layers,
                                          const FilterLimits& limits, MemoryBudget* budget,
                                          std::unique_ptr<CountingBloomFilter>* out,
                                          uint64_t hash_seed) {
  out->reset();
  // The loader has already refused these with precise texts; here they only
  // must never produce a filter. The chain checks the rest the same way.
  if (!(error_rate > 0 && error_rate <= kMaxBloomErrorRate) || !IsCounterWidth(counter_bits)) {
    return FilterStatus::kInvalidOptions;
  }
  Chain::Pending chain;
  const FilterStatus status = Chain::Restore(
      layers, expansion, BlockedCountingBloom::BlockCellsFor(counter_bits),
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

FilterStatus CountingBloomFilter::Add(const KeyHash& h, bool* was_new) {
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
  });
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
