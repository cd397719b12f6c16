// Lane arithmetic for the counters of a BlockedCountingBloom block (SWAR):
// kBits-bit counters packed in 64-bit words, and an item's cells gathered
// into one lane mask per word of its block. Shared by the layer's own
// Increment / Decrement / MinCounter and by CountingBloomFilter::AddBatch,
// which checks and increments an item with one gather (see
// blocked_counting_bloom.h for the word layout).
#pragma once

#include <bit>
#include <cstdint>

namespace bloomgate::internal {

// A "lane mask" has only the lowest bit of each selected lane set, so adding
// or subtracting it changes each selected counter by exactly one; callers
// never add to a lane at its max or subtract from a lane at 0, so no carry or
// borrow ever crosses into the neighbouring lane.
template <uint32_t kBits>
struct Lanes {
  static_assert(kBits == 4 || kBits == 8);
  static constexpr uint32_t kPerWord = 64 / kBits;                  // 16 or 8
  static constexpr uint32_t kBlockCells = 512 / kBits;              // 128 or 64
  static constexpr uint32_t kCellShift = 64 - std::countr_zero(kBlockCells);  // 57 or 58
  static constexpr uint64_t kMax = (uint64_t{1} << kBits) - 1;      // 15 or 255
  static constexpr uint64_t kLow = UINT64_MAX / kMax;  // 0x1111... or 0x0101...

  // The low bit of every lane whose bits are all ones (a saturated counter).
  static uint64_t Saturated(uint64_t x) {
    uint64_t m = x;
    for (uint32_t i = 1; i < kBits; ++i) m &= x >> i;
    return m & kLow;
  }
  // The low bit of every lane that is not zero.
  static uint64_t NonZero(uint64_t x) {
    uint64_t m = x;
    for (uint32_t i = 1; i < kBits; ++i) m |= x >> i;
    return m & kLow;
  }
  static uint64_t Lane(uint64_t word, uint32_t lane) { return (word >> (lane * kBits)) & kMax; }
};

// An item's distinct cells in one block: one lane mask per word.
struct CellMasks {
  uint64_t word[8];
};

// Probe i of an item is the top log2(block cells) bits of lo * M^i
// (M = kProbeMultiplier of blocked_counting_bloom.h).
inline constexpr uint64_t kCounterProbeMultiplier = 0x9e3779b97f4a7c15ull;

// The cells of an item's first `probes` probes, gathered once and extended
// when a later layer asks for more: a filter's layers tighten their error
// rate as they grow, so their probe counts rise oldest to newest (e.g. 7, 8,
// 9 ...) and a scan in that order pays one multiply per probe in all, not
// one per probe per layer. A layer asking for fewer probes than gathered
// (only a restored filter's odd shapes) starts over.
template <uint32_t kBits>
class ProbeCells {
 public:
  explicit ProbeCells(uint64_t lo) : lo_(lo), x_(lo) {}

  const CellMasks& For(uint32_t probes) {
    if (probes < done_) {
      masks_ = {};
      x_ = lo_;
      done_ = 0;
    }
    using L = Lanes<kBits>;
    for (; done_ < probes; ++done_) {
      const uint32_t cell = static_cast<uint32_t>(x_ >> L::kCellShift);
      masks_.word[cell / L::kPerWord] |= uint64_t{1} << ((cell % L::kPerWord) * kBits);
      x_ *= kCounterProbeMultiplier;
    }
    return masks_;
  }

 private:
  const uint64_t lo_;
  uint64_t x_;
  uint32_t done_ = 0;
  CellMasks masks_ = {};
};

}  // namespace bloomgate::internal
