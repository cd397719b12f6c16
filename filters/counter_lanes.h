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

  // The top bit of every lane (0x8888... or 0x8080...): a word without any
  // has every counter at most kHalf - 1 (7 or 127), where one increment
  // cannot reach kMax and v + (kHalf - 1) cannot carry out of its lane.
  static constexpr uint64_t kHigh = kLow << (kBits - 1);
  static constexpr uint64_t kBelowHigh = kHigh - kLow;  // 0x7777... or 0x7f7f...
  // The lanes of `lanes` (a lane mask) that are non-zero in x, for a word x
  // without kHigh bits: NonZero(x) & lanes in three operations instead of
  // 2 x kBits. A lane v in [0, 7] (or [0, 127]) plus 7 (127) has its top bit
  // set iff v >= 1, and stays inside its lane.
  static uint64_t NonZeroBelowHalf(uint64_t x, uint64_t lanes) {
    return ((x + kBelowHigh) >> (kBits - 1)) & lanes;
  }
};

// An item's distinct cells in one block: one lane mask per word.
struct alignas(16) CellMasks {  // 16: read as four 128-bit vectors (ReadBlock)
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
      // Cell c = x >> kCellShift is lane c % kPerWord of word c / kPerWord:
      // the word is x's top 3 bits for both widths, and the lane's shift
      // (lane x kBits) is read straight from x, one shift and one mask.
      const uint64_t word = x_ >> (64 - 3);
      const uint32_t shift = static_cast<uint32_t>(x_ >> (L::kCellShift - kLaneShiftBits)) &
                             (64 - kBits);
      masks_.word[word] |= uint64_t{1} << shift;
      x_ *= kCounterProbeMultiplier;
    }
    return masks_;
  }

 private:
  static constexpr uint32_t kLaneShiftBits = std::countr_zero(kBits);  // log2(kBits): 2 or 3
  static_assert(Lanes<kBits>::kCellShift + std::countr_zero(Lanes<kBits>::kPerWord) == 64 - 3,
                "a block's 8 words are picked by the top 3 bits of x");

  const uint64_t lo_;
  uint64_t x_;
  uint32_t done_ = 0;
  CellMasks masks_ = {};
};

}  // namespace bloomgate::internal
