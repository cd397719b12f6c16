#include "filters/blocked_counting_bloom.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <new>
#include <type_traits>

#include "filters/block_words.h"
#include "filters/limits.h"

namespace bloomgate {
namespace {

static_assert(BlockedCountingBloom::kBlockBytes == 64, "a block is one line of block_words.h");

using internal::Lanes;
static_assert(internal::kCounterProbeMultiplier == BlockedCountingBloom::kProbeMultiplier,
              "counter_lanes.h gathers the probes drawn in blocked_counting_bloom.h");

// The item's distinct cells as one lane mask per word of its block.
template <uint32_t kBits>
internal::CellMasks GatherCells(uint64_t lo, uint32_t probes) {
  return internal::ProbeCells<kBits>(lo).For(probes);
}

}  // namespace

uint64_t BlockedCountingBloom::BytesFor(const BlockedShape& shape) {
  if (shape.block_cells == 0) return 0;
  const uint64_t units =
      shape.cells / shape.block_cells + (shape.cells % shape.block_cells != 0 ? 1 : 0);
  if (IsClassicCells(shape.block_cells)) {
    // One word per granule, in whole lines (units < 2^55).
    return (units + kWordsPerBlock - 1) / kWordsPerBlock * kBlockBytes;
  }
  return units * kBlockBytes;  // blocks < 2^55, so < 2^61 bytes
}

std::unique_ptr<BlockedCountingBloom> BlockedCountingBloom::Create(const BlockedShape& shape,
                                                                   uint32_t counter_bits) {
  if (counter_bits != kCountingBloomNarrowCounterBits &&
      counter_bits != kCountingBloomWideCounterBits) {
    return nullptr;
  }
  const bool classic = shape.block_cells == ClassicCellsFor(counter_bits);
  if ((!classic && shape.block_cells != BlockCellsFor(counter_bits)) || shape.cells == 0 ||
      shape.cells % shape.block_cells != 0 || shape.cells >= MaxBlockedCells(shape.block_cells) ||
      shape.probes < 1 || shape.probes > kMaxBloomProbes) {
    return nullptr;
  }
  const uint64_t bytes = BytesFor(shape);
  const uint64_t num_words = classic ? shape.cells / shape.block_cells : bytes / 8;
  std::atomic<uint64_t>* words = internal::NewZeroedBlockWords(bytes);
  if (words == nullptr) return nullptr;
  auto* layer = new (std::nothrow) BlockedCountingBloom(words, bytes / kBlockBytes, num_words,
                                                        shape.probes, counter_bits, classic);
  if (layer == nullptr) {
    internal::DeleteBlockWords(words, bytes);
    return nullptr;
  }
  return std::unique_ptr<BlockedCountingBloom>(layer);
}

BlockedCountingBloom::BlockedCountingBloom(std::atomic<uint64_t>* words, uint64_t num_blocks,
                                           uint64_t num_words, uint32_t probes,
                                           uint32_t counter_bits, bool classic)
    : words_(words),
      num_blocks_(num_blocks),
      num_words_(num_words),
      probes_(probes),
      counter_bits_(counter_bits),
      block_cells_(BlockCellsFor(counter_bits)),
      classic_(classic) {}

BlockedCountingBloom::~BlockedCountingBloom() {
  internal::DeleteBlockWords(words_, num_blocks_ * kBlockBytes);
}

// Memory order: relaxed for every counter access, as for BlockedBloom's bits.
// Nothing else is published through the counters (no thread reads other
// memory because it saw a counter), and what the filter promises -- no update
// lost or doubled -- is a property of each word's modification order, which
// every read-modify-write on that word joins whatever the order argument: a
// compare_exchange succeeds only against the latest value, and on failure it
// reloads `old` so the loop recomputes the change from what is really there.
// Callers that need "an Add that returned happens-before this lookup" already
// have that edge (a reply round-trip, a join, the layer list's acquire).

template <uint32_t kBits>
void BlockedCountingBloom::IncrementImpl(const KeyHash& h) {
  const uint64_t newly_saturated = BlockIncrement<kBits, CounterWrites::kShared>(
      BlockFor(h.hi), GatherCells<kBits>(h.lo, probes_));
  if (newly_saturated != 0) NoteSaturated(newly_saturated);
}

template <uint32_t kBits>
bool BlockedCountingBloom::DecrementImpl(const KeyHash& h) {
  using L = Lanes<kBits>;
  const internal::CellMasks masks = GatherCells<kBits>(h.lo, probes_);
  std::atomic<uint64_t>* const block = BlockFor(h.hi);
  bool emptied = false;
  for (uint64_t w = 0; w < kWordsPerBlock; ++w) {
    const uint64_t mine = masks.word[w];
    if (mine == 0) continue;
    // Relaxed (see above).
    uint64_t old = block[w].load(std::memory_order_relaxed);
    for (;;) {
      // Never below 0 (no borrow into the next lane), never off the max.
      const uint64_t sub = mine & L::NonZero(old) & ~L::Saturated(old);
      if (sub == 0) break;
      const uint64_t next = old - sub;
      // Relaxed on success and failure (see above); a failure refreshes `old`.
      if (block[w].compare_exchange_weak(old, next, std::memory_order_relaxed,
                                         std::memory_order_relaxed)) {
        emptied |= (sub & ~L::NonZero(next)) != 0;
        break;
      }
    }
  }
  return emptied;
}

template <uint32_t kBits>
uint64_t BlockedCountingBloom::MinCounterImpl(const KeyHash& h) const {
  using L = Lanes<kBits>;
  const std::atomic<uint64_t>* const block = BlockFor(h.hi);
  uint64_t min = L::kMax;
  uint64_t x = h.lo;
  for (uint32_t i = 0; i < probes_; ++i) {
    const uint32_t cell = static_cast<uint32_t>(x >> L::kCellShift);
    // Relaxed (see above).
    const uint64_t word = block[cell / L::kPerWord].load(std::memory_order_relaxed);
    min = std::min(min, L::Lane(word, cell % L::kPerWord));
    // Most misses stop after one or two probes, as in BlockedBloom.
    if (min == 0) return 0;
    x *= kProbeMultiplier;
  }
  return min;
}

uint32_t BlockedCountingBloom::ClassicCells(const KeyHash& h, uint64_t* out) const {
  const uint64_t total = cells();
  // Double hashing; hi | 1 so that no item's probes all land on one cell.
  const uint64_t step = h.hi | 1;
  uint32_t n = 0;
  for (uint32_t i = 0; i < probes_; ++i) {
    const uint64_t x = h.lo + uint64_t{i} * step;
    const uint64_t cell = static_cast<uint64_t>((static_cast<unsigned __int128>(x) * total) >> 64);
    // Each distinct cell once (k <= 64: a linear scan beats sorting here).
    if (std::find(out, out + n, cell) == out + n) out[n++] = cell;
  }
  return n;
}

uint32_t BlockedCountingBloom::ClassicStep(const KeyHash& h, bool up) {
  uint64_t distinct[kMaxBloomProbes];
  const uint32_t n = ClassicCells(h, distinct);
  const uint32_t per_word = 64 / counter_bits_;
  const uint64_t max = max_count();
  uint32_t reached = 0;  // counters taken to the max (up) or to 0 (down)
  for (uint32_t i = 0; i < n; ++i) {
    std::atomic<uint64_t>& word = words_[distinct[i] / per_word];
    const uint32_t shift = static_cast<uint32_t>(distinct[i] % per_word) * counter_bits_;
    const uint64_t one = uint64_t{1} << shift;
    // Relaxed (see above); a failed exchange refreshes `old`.
    uint64_t old = word.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t counter = (old >> shift) & max;
      // Saturated counters stay; never below 0.
      if (counter == max || (!up && counter == 0)) break;
      if (word.compare_exchange_weak(old, up ? old + one : old - one, std::memory_order_relaxed,
                                     std::memory_order_relaxed)) {
        reached += up ? counter + 1 == max : counter == 1;
        break;
      }
    }
  }
  return reached;
}

void BlockedCountingBloom::ClassicIncrement(const KeyHash& h) {
  if (const uint32_t saturated = ClassicStep(h, /*up=*/true); saturated != 0) {
    NoteSaturated(saturated);
  }
}

bool BlockedCountingBloom::ClassicDecrement(const KeyHash& h) {
  return ClassicStep(h, /*up=*/false) != 0;
}

uint64_t BlockedCountingBloom::ClassicMinCounter(const KeyHash& h) const {
  const uint64_t total = cells();
  const uint64_t step = h.hi | 1;
  const uint32_t per_word = 64 / counter_bits_;
  uint64_t min = max_count();
  for (uint32_t i = 0; i < probes_; ++i) {
    const uint64_t x = h.lo + uint64_t{i} * step;
    const uint64_t cell = static_cast<uint64_t>((static_cast<unsigned __int128>(x) * total) >> 64);
    // Relaxed (see above).
    const uint64_t word = words_[cell / per_word].load(std::memory_order_relaxed);
    min = std::min(min, (word >> ((cell % per_word) * counter_bits_)) & max_count());
    if (min == 0) return 0;  // a miss usually stops after a probe or two
  }
  return min;
}

void BlockedCountingBloom::Increment(const KeyHash& h) {
  if (classic_) return ClassicIncrement(h);
  if (counter_bits_ == kCountingBloomNarrowCounterBits) {
    IncrementImpl<kCountingBloomNarrowCounterBits>(h);
  } else {
    IncrementImpl<kCountingBloomWideCounterBits>(h);
  }
}

bool BlockedCountingBloom::Decrement(const KeyHash& h) {
  if (classic_) return ClassicDecrement(h);
  return counter_bits_ == kCountingBloomNarrowCounterBits
             ? DecrementImpl<kCountingBloomNarrowCounterBits>(h)
             : DecrementImpl<kCountingBloomWideCounterBits>(h);
}

bool BlockedCountingBloom::MayContain(const KeyHash& h) const {
  return MinCounter(h) != 0;
}

uint64_t BlockedCountingBloom::MinCounter(const KeyHash& h) const {
  if (classic_) return ClassicMinCounter(h);
  return counter_bits_ == kCountingBloomNarrowCounterBits
             ? MinCounterImpl<kCountingBloomNarrowCounterBits>(h)
             : MinCounterImpl<kCountingBloomWideCounterBits>(h);
}

uint64_t BlockedCountingBloom::Counter(uint64_t cell) const {
  const uint32_t per_word = 64 / counter_bits_;
  // Relaxed (see above).
  const uint64_t word = words_[cell / per_word].load(std::memory_order_relaxed);
  return (word >> ((cell % per_word) * counter_bits_)) & max_count();
}

void BlockedCountingBloom::Prefetch(const KeyHash& h) const {
  // One line: blocks are 64 bytes and 64-byte aligned. Read intent, keep in
  // all cache levels (locality 3). A classic layer: its first probe's line,
  // the one every lookup reads.
  if (classic_) {
    const uint64_t cell =
        static_cast<uint64_t>((static_cast<unsigned __int128>(h.lo) * cells()) >> 64);
    __builtin_prefetch(words_ + cell / (64 / counter_bits_), /*rw=*/0, /*locality=*/3);
    return;
  }
  __builtin_prefetch(BlockFor(h.hi), /*rw=*/0, /*locality=*/3);
}

uint64_t BlockedCountingBloom::RecountSaturated() {
  const uint64_t words = num_words();
  uint64_t saturated = 0;
  for (uint64_t i = 0; i < words; ++i) {
    // Relaxed (see above); the layer is not published yet anyway.
    const uint64_t word = words_[i].load(std::memory_order_relaxed);
    const uint64_t lanes = counter_bits_ == kCountingBloomNarrowCounterBits
                               ? Lanes<kCountingBloomNarrowCounterBits>::Saturated(word)
                               : Lanes<kCountingBloomWideCounterBits>::Saturated(word);
    // Almost every word has no saturated lane; skipping popcount there
    // matters on builds without a popcount instruction (x86-64 baseline),
    // where it is a ~20-instruction sequence: it was half of the time of
    // copying a counting filter for a snapshot.
    if (lanes != 0) saturated += static_cast<uint64_t>(std::popcount(lanes));
  }
  // Relaxed: a statistic, published with the layer itself.
  saturated_.store(saturated, std::memory_order_relaxed);
  return saturated;
}

uint64_t BlockedCountingBloom::saturated_counters() const {
  // Relaxed: a statistic; exact once concurrent updates have finished.
  return saturated_.load(std::memory_order_relaxed);
}

}  // namespace bloomgate
