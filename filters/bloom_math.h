#pragma once

#include <cstdint>

namespace bloomgate {

// Sizing and false-positive formulas for Bloom filters, as small pure
// functions. Nothing here allocates or touches a filter; the filters call
// ChooseBlockedBloomShape and the tests check the formulas and the sizes.

// One block of the blocked layout: a 64-byte cache line, the unit one item's
// probes all fall into.
constexpr int kBloomBlockBits = 512;

// The largest bit count a shape can have: the most whole 512-bit blocks that
// fit in 64 bits. ChooseBlockedBloomShape saturates to this value instead of
// overflowing; a filter treats such a shape as absurd (it can never be
// allocated: it is 2^61 bytes).
constexpr uint64_t kMaxBloomBits = ((uint64_t{1} << 55) - 1) * kBloomBlockBits;

// ChooseBlockedBloomShape sizes for fp_rate * kBloomFpSafetyMargin. The model
// below already over-estimates the measured FP of our layout by 2-9% (see
// BlockedBloomFpRate); the extra 5% keeps the measured rate under the request
// across hash seeds and item sets, and costs 0.13-0.16 bits/key at 1%-0.1%.
constexpr double kBloomFpSafetyMargin = 0.95;

// Bits/key are resolved in steps of 1/64 bit before rounding to whole blocks.
constexpr double kBloomBitsPerKeyStep = 1.0 / 64;

// FP rate of a standard Bloom filter with `bits_per_key` bits per added key
// and `probes` hash functions:  (1 - e^{-k/b})^k  (Bloom 1970; the usual
// estimate, e.g. Wikipedia "Bloom filter", "Probability of false positives").
// 10 bits/key with 7 probes gives 0.8194%. Returns 1 for b <= 0 or k < 1.
double StandardBloomFpRate(double bits_per_key, int probes);

// FP rate of a blocked Bloom filter: every key sets (and a query checks)
// `probes` bits drawn uniformly, with repetition, inside ONE block of
// `block_bits` bits picked uniformly at random. The number of keys N in the
// query's block is Poisson with mean lambda = block_bits / bits_per_key
// (Putze, Sanders, Singler, "Cache-, Hash- and Space-Efficient Bloom
// Filters", 2007, section 3). A block holding n keys has absorbed n*k throws,
// so a given bit is set with probability f(n) = 1 - (1 - 1/B)^{n k}; the
// query's k throws land on D distinct bits, with D distributed as k throws
// into B bins, and all must be set:
//
//   FP = sum_n  Pois(n; lambda) * sum_d P(D = d) * f(n)^d
//
// Counting the query's repeated probes (the sum over d) is what makes this an
// upper bound for our layout: with the plain f(n)^k it gives 0.9574% for
// 10 bits/key, 6 probes, 512-bit blocks (RocksDB quotes 0.9535% as the
// theoretical best there and measures 0.957% for its FastLocalBloom), while
// this formula gives 0.9891% and we measure 0.972%. At 1e-3 .. 1e-5 it is 4-9%
// above the measured rate, the simpler one 3-12% below it: the golden-ratio
// probe sequence repeats a bit less often than independent probes would.
// Poisson block loads also over-estimate a filter with few blocks (its load is
// binomial, less spread), so small filters only do better.
double BlockedBloomFpRate(double bits_per_key, int probes, int block_bits);

struct BloomShape {
  uint64_t bits;        // whole 512-bit blocks; kMaxBloomBits if saturated
  uint32_t probes;      // bits set per item, all inside one block
  double bits_per_key;  // bits / capacity (after rounding up to blocks)
  double predicted_fp;  // BlockedBloomFpRate at that bits_per_key, at capacity
};

// Smallest blocked-Bloom shape whose predicted FP at `capacity` keys is at
// most fp_rate * kBloomFpSafetyMargin: the fewest bits/key (in 1/64-bit
// steps) over all probe counts 1..kMaxBloomProbes, then bits rounded up to
// whole blocks and the probe count re-chosen for the bits/key actually given.
// Computed in double, so any capacity up to UINT64_MAX is safe: bits saturate
// at kMaxBloomBits (callers check bytes against their limits). An fp_rate
// that is not in (0, 1), or one no shape can reach, also yields a saturated
// shape; a capacity of 0 is sized as 1.
//
// What the blocked layout costs (bits/key here vs the textbook optimum
// -log2(p)/ln 2 = 1.44 log2(1/p) of a standard Bloom filter; large capacity):
//
//   p       textbook   blocked, no margin   chosen (x0.95 margin)   probes
//   1%        9.59        9.98                 10.11                    7
//   0.5%     11.03       11.62                 11.75                    7
//   0.1%     14.38       15.70                 15.83                    9
//   0.01%    19.17       22.31                 22.47                   12
//   1e-6     28.76       39.59                 39.84                   16
//   1e-9     43.13       82.78                 83.22                   22
//
// Measured at capacity 1M (filters_test): 0.92% at 1%, 0.087% at 0.1%,
// 0.0087% at 0.01%. The penalty over the textbook grows as p falls, because
// crowded blocks (the Poisson tail) dominate: +5% bits at 1%, +10% at 0.1%,
// +17% at 0.01%, +93% at 1e-9. That is the price of touching one cache line
// per operation; a scalable filter's deep layers (error halved per layer) pay
// the most, which is one reason kMaxBloomLayers is finite.
BloomShape ChooseBlockedBloomShape(double fp_rate, uint64_t capacity);

// WHERE ONE BLOCK PER ITEM STOPS PAYING. A blocked layer touches one cache
// line per add and lookup; a classic layer (k probes over the whole array,
// redisbloom_layout.h's ChooseClassicBloomShape, sized as RedisBloom sizes
// it) touches up to k lines for a present item and ~2 for an absent one (each
// probe finds a set bit with probability ~1/2), but needs fewer bits. Bits/key
// at capacity 1M, layer error rate p (a scaling filter's layer 0 gets half the
// requested rate: BF.RESERVE k 0.01 -> p = 0.005):
//
//   requested  layer p   blocked (k)   classic = RedisBloom's (k)   blocked/classic
//   0.1        0.05        6.47  (4)     6.24  (4)                     1.038
//   0.01       0.005      11.75  (7)    11.03  (8)                     1.066
//   1e-3       5e-4       17.72 (10)    15.82 (11)                     1.120
//   1e-4       5e-5       24.70 (13)    20.61 (14)                     1.198
//   1e-6       5e-7       43.06 (17)    30.20 (21)                     1.426
//   1e-9       5e-10      89.34 (23)    44.58 (31)                     2.004
//
// (filters_test BloomLayoutChoice.CrossoverTable prints it.) Where the
// blocked layout's premium is at most 10% of the memory it buys one line
// per operation instead of ~2 (absent item) to k (present); below that the
// premium grows fast (+20% at 5e-5, +43% at 5e-7, +100% at 5e-10) while the
// lines saved stay ~1-2 per absent item (the common case of a lookup), so a
// new filter there gets classic layers. The premium crosses 10% at a layer
// rate of ~1.0e-3 (1.096 at 1.2e-3, 1.101 at 1e-3, 1.105 at 9e-4): a scaling
// BF.RESERVE under 0.002 (a NONSCALING one under 0.001) is classic. The
// price of the blocked layout above the crossover is that BF.INFO Size there
// is 4-7% over RedisBloom's (bench/README.md).
constexpr double kClassicBloomBelowErrorRate = 1e-3;

// True iff a new filter whose layer 0 has error rate `layer_error_rate` gets
// classic layers (see the table above).
inline bool ClassicBloomPays(double layer_error_rate) {
  return layer_error_rate < kClassicBloomBelowErrorRate;
}

// The blocked layout with `block_cells` cells per 64-byte block instead of
// 512 bits: a counting Bloom filter packs 128 4-bit or 64 8-bit counters into
// one cache line, and an item's counters all fall into one block. A query is a
// false positive iff all its cells are non-zero, which is exactly "all its
// bits are set" in a Bloom filter over the same probes, so the Poisson model
// of BlockedBloomFpRate applies with block_bits = block_cells.
struct BlockedShape {
  uint64_t cells;          // whole blocks of block_cells; MaxBlockedCells(...) if saturated
  uint32_t block_cells;    // cells per 64-byte block
  uint32_t probes;         // cells touched per item, all inside one block
  double cells_per_key;    // cells / capacity (after rounding up to blocks)
  double predicted_fp;     // BlockedBloomFpRate at that cells_per_key, at capacity

  uint64_t blocks() const { return cells / block_cells; }
};

// The most cells a shape can have: the same 2^55 - 1 blocks as kMaxBloomBits
// (so < 2^61 bytes, whatever the cell width).
constexpr uint64_t MaxBlockedCells(uint32_t block_cells) {
  return ((uint64_t{1} << 55) - 1) * block_cells;
}
static_assert(MaxBlockedCells(kBloomBlockBits) == kMaxBloomBits);

// ChooseBlockedBloomShape for blocks of `block_cells` cells (16..512): the same
// search, margin and saturation rules (a saturated shape has
// cells == MaxBlockedCells(block_cells), probes 1, predicted_fp 1).
// ChooseBlockedShape(p, n, 512) is ChooseBlockedBloomShape(p, n) exactly.
//
// Smaller blocks spread the per-block load more (the Poisson tail is fatter
// relative to the mean), so they need more cells per key. Large capacity,
// x0.95 margin included (filters_test prints this table):
//
//   p       512 cells (Bloom)   128 cells (4-bit)   64 cells (8-bit)
//   1%        10.11  k=7          11.27  k=6          12.92  k=6
//   0.5%      11.75  k=7          13.55  k=7          16.11  k=6
//   0.1%      15.83  k=9          19.97  k=8          26.33  k=8
//   0.01%     22.47  k=12         32.97  k=10         51.78  k=9
//
// So a counting filter at 1% costs 4 x 11.27 = 45.1 bits/key with 4-bit
// counters and 8 x 12.92 = 103.4 bits/key with 8-bit ones (a scaling filter's
// first layer is sized for half the rate: 54.2 and 128.9 bits/key).
BlockedShape ChooseBlockedShape(double fp_rate, uint64_t capacity, uint32_t block_cells);

// A classic (unblocked) array of `granule_cells` cells per granule: every
// probe picks its cell anywhere in the array, so the textbook model applies
// (StandardBloomFpRate). Sized for fp_rate * kBloomFpSafetyMargin with at
// most kMaxBloomProbes probes: at the best whole k <= 64 the fewest cells per
// key that reach the target are b = -k / ln(1 - target^(1/k)) (solving
// (1 - e^{-k/b})^k = target for b), then whole granules and the probe count
// re-chosen for the cells actually given. Where the optimum k = log2(1/target)
// is above 64 (target < ~5e-20) the cap costs little: 96 cells/key at 1e-20
// (optimum 96.0 at k = 66), 106 at 1e-22 (103.4), 237 at 1e-40 (192).
// So unlike ChooseBlockedShape (whose 128-cell blocks need 2.4 million cells
// per key at 1.7e-20, table above) it never explodes as the rate falls; the
// price is one cache line per probe instead of one per item. Saturated like
// ChooseBlockedShape (cells == MaxBlockedCells(granule_cells), probes 1,
// predicted_fp 1) for an fp_rate outside (0, 1) or a size past the cap.
BlockedShape ChooseClassicShape(double fp_rate, uint64_t capacity, uint32_t granule_cells);

}  // namespace bloomgate
