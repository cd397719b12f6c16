#include "filters/bloom_math.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "filters/limits.h"

namespace bloomgate {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// ln(n!) without std::lgamma, which writes the global `signgam` in glibc and
// so is a data race when two threads size filters at once. Exact sum below 32,
// Stirling's series above (error < 1e-12 there).
double LogFactorial(uint64_t n) {
  if (n < 32) {
    double sum = 0;
    for (uint64_t i = 2; i <= n; ++i) sum += std::log(static_cast<double>(i));
    return sum;
  }
  const double x = static_cast<double>(n);
  constexpr double kHalfLogTwoPi = 0.91893853320467274178;
  return (x + 0.5) * std::log(x) - x + kHalfLogTwoPi + 1 / (12 * x) - 1 / (360 * x * x * x);
}

// P(D = d) for d = 0..k: the number of distinct bits hit by k uniform throws
// into `block_bits` bits. O(k^2) dynamic programme over throws.
std::array<double, kMaxBloomProbes + 1> DistinctProbeDistribution(int probes, int block_bits) {
  std::array<double, kMaxBloomProbes + 1> p{};
  p[0] = 1;
  const double bins = block_bits;
  for (size_t thrown = 0; thrown < static_cast<size_t>(probes); ++thrown) {
    // After one more throw: stays at d with prob d/B, moves to d+1 otherwise.
    for (size_t d = thrown + 1; d >= 1; --d) {
      const double hit = static_cast<double>(d);
      p[d] = p[d] * (hit / bins) + p[d - 1] * ((bins - (hit - 1)) / bins);
    }
    p[0] = 0;
  }
  return p;
}

// The Poisson mix of BlockedBloomFpRate for probes <= kMaxBloomProbes.
double BlockedFp(double bits_per_key, int probes, int block_bits,
                 const std::array<double, kMaxBloomProbes + 1>& distinct) {
  const double lambda = block_bits / bits_per_key;  // mean keys per block
  // Beyond ~1e6 keys per block every bit is set many times over.
  if (!(lambda < 1e6)) return 1.0;
  // q^n = (1 - 1/B)^{n k} is the chance one bit is still clear after n keys.
  const double q = std::pow(1.0 - 1.0 / block_bits, probes);
  // sum_d P(D = d) f^d, by Horner.
  auto query_hits = [&](double fill) {
    double s = 0;
    for (size_t d = static_cast<size_t>(probes); d >= 1; --d) s = (s + distinct[d]) * fill;
    return s;
  };

  // Start at the mode and walk both ways, so the pmf never underflows where it
  // matters and each step is one multiplication.
  const uint64_t mode = static_cast<uint64_t>(lambda);
  const double mode_pmf =
      std::exp(-lambda + static_cast<double>(mode) * std::log(lambda) - LogFactorial(mode));
  const double mode_clear = std::pow(q, static_cast<double>(mode));
  double total = mode_pmf * query_hits(1.0 - mode_clear);

  // Downwards: the fill shrinks too, so stop once a term is negligible.
  double pmf = mode_pmf;
  double clear = mode_clear;
  for (uint64_t n = mode; n > 0; --n) {
    pmf *= static_cast<double>(n) / lambda;
    clear /= q;
    const double term = pmf * query_hits(1.0 - clear);
    total += term;
    if (term <= total * 1e-17 || pmf == 0) break;
  }
  // Upwards: terms are bounded by the pmf (the fill is at most 1), and once
  // r = lambda/(n+1) < 1 the rest of the tail is at most pmf * r / (1 - r).
  pmf = mode_pmf;
  clear = mode_clear;
  for (uint64_t n = mode + 1;; ++n) {
    pmf *= lambda / static_cast<double>(n);
    clear *= q;
    total += pmf * query_hits(1.0 - clear);
    if (pmf == 0) break;
    const double r = lambda / static_cast<double>(n + 1);
    if (r < 1 && pmf * r / (1 - r) <= total * 1e-17) break;
  }
  return std::min(total, 1.0);
}

// The fewest bits (cells)/key, a multiple of kBloomBitsPerKeyStep, at which
// `probes` probes into blocks of `block_cells` reach `target`, or infinity if
// none below MaxBlockedCells cells/key does. BlockedFp falls as cells/key
// grow, so step up by 1.5x, then bisect.
double MinBitsPerKey(double target, int probes, double textbook, int block_cells) {
  const auto distinct = DistinctProbeDistribution(probes, block_cells);
  auto fp = [&](double bpk) { return BlockedFp(bpk, probes, block_cells, distinct); };
  // A blocked filter never beats the standard optimum, so start there.
  double lo = std::max(textbook, 1.0) * 0.99;
  if (fp(lo) <= target) return std::ceil(lo / kBloomBitsPerKeyStep) * kBloomBitsPerKeyStep;
  double hi = lo;
  const double max_cells_per_key =
      static_cast<double>(MaxBlockedCells(static_cast<uint32_t>(block_cells)));
  do {
    lo = hi;
    hi *= 1.5;
    if (hi > max_cells_per_key) return kInfinity;
  } while (fp(hi) > target);
  // Bounded twice: past ~2^47 cells/key neighbouring doubles are further
  // apart than the step, so hi - lo can stop shrinking (mid rounds to lo or
  // hi), and a loop on the gap alone then never ends (BF.RESERVE k 1e-62
  // 100 would hang an I/O thread). 64 halvings shrink any gap below the
  // 1.5x bracket by 2^-64, far under the step.
  for (int i = 0; i < 64 && hi - lo > kBloomBitsPerKeyStep; ++i) {
    const double mid = (lo + hi) / 2;
    if (!(mid > lo && mid < hi)) break;
    (fp(mid) <= target ? hi : lo) = mid;
  }
  return std::ceil(hi / kBloomBitsPerKeyStep) * kBloomBitsPerKeyStep;
}

struct ProbeChoice {
  double bits_per_key;  // infinity if unreachable
  int probes;
};

// The fewest bits (cells)/key over all probe counts for `target`.
ProbeChoice FewestBitsPerKey(double target, int block_cells) {
  constexpr int kMaxProbes = static_cast<int>(kMaxBloomProbes);
  const double textbook = -std::log2(target) / std::log(2.0);
  // The best probe count is unimodal in k: start a little under the standard
  // optimum (the blocked optimum is lower: 6 vs 7 at 1%, 22 vs 30 at 1e-9) and
  // walk towards fewer bits/key.
  ProbeChoice best;
  best.probes =
      std::clamp(static_cast<int>(std::lround(0.8 * std::log(2.0) * textbook)), 1, kMaxProbes);
  best.bits_per_key = MinBitsPerKey(target, best.probes, textbook, block_cells);
  for (int step : {-1, +1}) {
    for (int k = best.probes + step; k >= 1 && k <= kMaxProbes; k += step) {
      const double bpk = MinBitsPerKey(target, k, textbook, block_cells);
      if (!(bpk < best.bits_per_key)) break;
      best = ProbeChoice{bpk, k};
    }
  }
  return best;
}

// FewestBitsPerKey costs ~60 us (a few hundred evaluations of the Poisson
// mix), while a server keeps asking for the same few rates: 0.005 for every
// default filter it creates, then 0.0025, 0.00125... as they grow. A small
// per-thread memo makes those ~free without any locking; results are the
// same with or without it.
ProbeChoice CachedFewestBitsPerKey(double target, int block_cells) {
  struct Entry {
    double target;  // 0 = empty slot (never a valid target)
    int block_cells;
    ProbeChoice choice;
  };
  constexpr size_t kEntries = 16;
  thread_local std::array<Entry, kEntries> cache{};
  thread_local size_t next_slot = 0;
  for (const Entry& entry : cache) {
    if (entry.target == target && entry.block_cells == block_cells) return entry.choice;
  }
  const ProbeChoice choice = FewestBitsPerKey(target, block_cells);
  cache[next_slot] = Entry{target, block_cells, choice};
  next_slot = (next_slot + 1) % kEntries;
  return choice;
}

}  // namespace

double StandardBloomFpRate(double bits_per_key, int probes) {
  if (!(bits_per_key > 0) || probes < 1) return 1.0;
  // -expm1(-x) is 1 - e^{-x} without cancellation when k/b is small.
  return std::pow(-std::expm1(-probes / bits_per_key), probes);
}

double BlockedBloomFpRate(double bits_per_key, int probes, int block_bits) {
  if (!(bits_per_key > 0) || probes < 1 || block_bits < 1) return 1.0;
  if (probes > static_cast<int>(kMaxBloomProbes)) {
    // Outside the table size we keep; cap the evaluated probes (only ever
    // reached by direct callers: shapes never exceed kMaxBloomProbes).
    probes = static_cast<int>(kMaxBloomProbes);
  }
  return BlockedFp(bits_per_key, probes, block_bits, DistinctProbeDistribution(probes, block_bits));
}

BloomShape ChooseBlockedBloomShape(double fp_rate, uint64_t capacity) {
  const BlockedShape shape = ChooseBlockedShape(fp_rate, capacity, kBloomBlockBits);
  return BloomShape{/*bits=*/shape.cells, /*probes=*/shape.probes,
                    /*bits_per_key=*/shape.cells_per_key, /*predicted_fp=*/shape.predicted_fp};
}

BlockedShape ChooseBlockedShape(double fp_rate, uint64_t capacity, uint32_t block_cells) {
  constexpr int kMaxProbes = static_cast<int>(kMaxBloomProbes);
  // Outside 16..512 the shape is refused as absurd (saturated), like a bad
  // rate: a 64-byte block holds at most 512 one-bit cells, and tinier blocks
  // make the model's (1 - 1/B)^k underflow its recurrences.
  constexpr uint32_t kMinBlockCells = 16;
  constexpr uint32_t kMaxBlockCells = kBloomBlockBits;
  const uint32_t cells_per_block = std::clamp(block_cells, kMinBlockCells, kMaxBlockCells);
  const uint64_t max_cells = MaxBlockedCells(cells_per_block);
  const double keys = static_cast<double>(std::max<uint64_t>(capacity, 1));
  const BlockedShape saturated{/*cells=*/max_cells, /*block_cells=*/cells_per_block,
                               /*probes=*/1,
                               /*cells_per_key=*/static_cast<double>(max_cells) / keys,
                               /*predicted_fp=*/1.0};
  if (!(fp_rate > 0 && fp_rate < 1) || cells_per_block != block_cells) return saturated;
  const int cells_int = static_cast<int>(block_cells);
  const ProbeChoice choice = CachedFewestBitsPerKey(fp_rate * kBloomFpSafetyMargin, cells_int);
  if (!(choice.bits_per_key < kInfinity)) return saturated;

  // Whole blocks, computed in double: capacity * cells/key can exceed 2^64.
  const double blocks = std::ceil(keys * choice.bits_per_key / block_cells);
  if (!(blocks < static_cast<double>(max_cells / block_cells))) return saturated;
  BlockedShape shape;
  shape.cells = static_cast<uint64_t>(blocks) * block_cells;
  shape.block_cells = block_cells;
  shape.cells_per_key = static_cast<double>(shape.cells) / keys;

  // Rounding up to blocks can add many bits/key to a small filter (100 keys at
  // 11.75 bits/key become 3 blocks = 15.36 bits/key); re-pick k for what we got.
  int best_k = choice.probes;
  auto fp_at = [&](int k) { return BlockedBloomFpRate(shape.cells_per_key, k, cells_int); };
  double best_fp = fp_at(best_k);
  for (int k = best_k + 1; k <= kMaxProbes; ++k) {
    const double fp = fp_at(k);
    if (!(fp < best_fp)) break;
    best_fp = fp;
    best_k = k;
  }
  shape.probes = static_cast<uint32_t>(best_k);
  shape.predicted_fp = best_fp;
  return shape;
}

BlockedShape ChooseClassicShape(double fp_rate, uint64_t capacity, uint32_t granule_cells) {
  constexpr int kMaxProbes = static_cast<int>(kMaxBloomProbes);
  const uint32_t granule = std::max<uint32_t>(granule_cells, 1);
  const uint64_t max_cells = MaxBlockedCells(granule);
  const double keys = static_cast<double>(std::max<uint64_t>(capacity, 1));
  const BlockedShape saturated{/*cells=*/max_cells, /*block_cells=*/granule, /*probes=*/1,
                               /*cells_per_key=*/static_cast<double>(max_cells) / keys,
                               /*predicted_fp=*/1.0};
  if (!(fp_rate > 0 && fp_rate < 1)) return saturated;
  const double target = fp_rate * kBloomFpSafetyMargin;
  // The real-valued optimum k = log2(1/target); of the whole counts around
  // it (capped at 64) take the one needing the fewest cells per key.
  const double optimum = -std::log2(target);
  double best_cells_per_key = kInfinity;
  for (double k : {std::floor(optimum), std::ceil(optimum)}) {
    k = std::clamp(k, 1.0, static_cast<double>(kMaxProbes));
    // -log1p(-x) is -ln(1 - x) without cancellation for small x.
    const double cells_per_key = -k / std::log1p(-std::pow(target, 1.0 / k));
    if (cells_per_key > 0) best_cells_per_key = std::min(best_cells_per_key, cells_per_key);
  }
  const double granules = std::ceil(keys * best_cells_per_key / granule);
  if (!(granules < static_cast<double>(max_cells / granule))) return saturated;
  BlockedShape shape;
  shape.cells = std::max<uint64_t>(static_cast<uint64_t>(granules), 1) * granule;
  shape.block_cells = granule;
  shape.cells_per_key = static_cast<double>(shape.cells) / keys;
  // Rounding up to granules can add cells/key to a small layer: re-pick k.
  int best_k = 1;
  double best_fp = StandardBloomFpRate(shape.cells_per_key, 1);
  for (int k = 2; k <= kMaxProbes; ++k) {
    const double fp = StandardBloomFpRate(shape.cells_per_key, k);
    if (!(fp < best_fp)) break;  // unimodal in k
    best_fp = fp;
    best_k = k;
  }
  shape.probes = static_cast<uint32_t>(best_k);
  shape.predicted_fp = best_fp;
  return shape;
}

}  // namespace bloomgate
