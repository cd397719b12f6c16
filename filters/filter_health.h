// Filter health: how full each layer is and the false-positive rate that
// fill implies now, beside the rate the layer was sized for. A Bloom layer
// past its capacity keeps answering, but its FP rate climbs with every add;
// a non-scaling filter is where that happens unnoticed.
//
// The implied rate is measured, not modelled from item counts: for a blocked
// layer (all k probes of an item in one block of C cells, k positions drawn
// independently), a lookup of an absent item is a false positive with
// probability (set_b / C)^k in block b, and blocks are chosen uniformly, so
//   fp_now(layer) = mean over blocks of (set_b / C)^k
// and a chain of layers answers "present" if any layer does:
//   fp_now(filter) = 1 - prod(1 - fp_now(layer)),
// summed as -expm1(sum log1p(-fp_now(layer))): 1 - (1 - x) in doubles is 0
// for x below 1.1e-16 (half an ulp of 1), and a fresh layer of a tight
// filter sits at 2.5e-29.
// Cuckoo: a lookup compares an 8-bit fingerprint with the 2 x b slots of
// its two buckets (RedisBloom's layout), each occupied with probability
// load, so fp ~= 2 * b * load / 255 per sub-filter.
//
// Cost: counting set cells reads every byte of a layer. A scan is bounded by
// `max_scan_bytes`: above it, evenly spaced runs of 64 blocks (4 KiB) are
// read and the counts extrapolated (`sampled`), so a request on a multi-GB
// filter costs what the budget costs and no more.
#pragma once

#include <cstdint>
#include <vector>

#include "filters/counting_bloom_filter.h"
#include "filters/cuckoo_filter.h"
#include "filters/scalable_bloom_filter.h"
#include "filters/t_digest.h"
#include "filters/windowed_bloom_filter.h"
#include "filters/windowed_counting_bloom_filter.h"

namespace bloomgate {

// 16 MiB: measured 9-11 ms of CPU per BLOOMGATE.HEALTH on 16 MB and 120 MB
// Bloom filters (2 shared cores, load ~20; the pow() per block dominates),
// and the whole of any filter up to 134M bits, exactly.
inline constexpr uint64_t kDefaultHealthScanBytes = 16ull << 20;

struct LayerHealth {
  uint64_t capacity = 0;     // items it was sized for (cuckoo: slots)
  uint64_t items = 0;
  uint64_t cells = 0;        // bits, counters or slots
  uint64_t cells_set = 0;    // non-zero cells (estimated when sampled)
  double fill_ratio = 0;     // cells_set / cells
  double fp_rate_design = 0; // what it was sized for (cuckoo: at full load)
  double fp_rate_now = 0;    // what the fill implies now
  uint64_t saturated = 0;    // counting Bloom: counters at their maximum
  bool sampled = false;
  uint64_t generation = 0;  // windowed: the generation it belongs to
};

struct FilterHealth {
  std::vector<LayerHealth> layers;  // oldest first
  double fp_rate_design = 0;  // the filter's requested rate (cuckoo: at full load)
  double fp_rate_now = 0;     // over all layers
  uint64_t capacity = 0;
  uint64_t items = 0;
  bool scaling = true;
  // A non-scaling filter holding more items than its capacity (a replayed
  // add is never refused, durability.h), so its FP rate is past its design.
  // Live adds to a full non-scaling filter are refused instead.
  bool over_capacity = false;
  // Non-scaling and at (or past) capacity: further adds are refused.
  bool full = false;
  uint64_t saturated = 0;     // counting Bloom, over all layers
  uint64_t bytes_scanned = 0;
  bool windowed = false;  // layers carry their generation
};

FilterHealth BloomHealth(const ScalableBloomFilter& filter,
                         uint64_t max_scan_bytes = kDefaultHealthScanBytes);
// Windowed Bloom: the layers of every generation a lookup at `now_ms` asks
// (the same liveness rule as MayContain and BF.CARD's ItemsAt, so a window
// that lapsed with no add since shows none), oldest slot first, with
// fp_rate_now over all of them. Capacity and items are those generations'
// sums (an item added again in a later generation counts in both).
FilterHealth WindowedBloomHealth(const WindowedBloomFilter& filter, int64_t now_ms,
                                 uint64_t max_scan_bytes = kDefaultHealthScanBytes);
FilterHealth CountingBloomHealth(const CountingBloomFilter& filter,
                                 uint64_t max_scan_bytes = kDefaultHealthScanBytes);
// As WindowedBloomHealth, over the generations live at `now_ms`.
FilterHealth WindowedCountingBloomHealth(const WindowedCountingBloomFilter& filter,
                                         int64_t now_ms,
                                         uint64_t max_scan_bytes = kDefaultHealthScanBytes);
// Cuckoo: the occupancy per sub-filter reads every slot (one byte each);
// without `per_sub_filter` only the totals (items, slots), in O(1).
FilterHealth CuckooHealth(const CuckooFilter& filter, bool per_sub_filter = true);
// T-digest: no false positives, but a bound on how far a quantile answer's
// rank can be from the truth, and how full the centroid array is. Capacity
// is the centroid slots (6 x compression + 10), items the slots in use
// (merged centroids and unmerged values), so INFO's load figure stays in
// [0, 1]; the digest compresses when they run out, so it is never `full`.
// One layer, the centroid array: cells = slots, cells_set = merged
// centroids, and two rank errors (fractions of the weight) in place of FP
// rates:
//   fp_rate_now    = max over slots of w / (2 W): half the widest centroid's
//                    share of the weight W. A quantile answer falls inside one
//                    centroid, so its rank is off by at most that (the
//                    interpolation inside the centroid is usually far better:
//                    compression 100, 1M uniform samples, measured p50 error
//                    3.5e-3);
//   fp_rate_design = (pi / 4) ln(W) / compression: the same half-width that
//                    the compress rule allows a centroid at the median,
//                    q (1 - q) x 2 pi ln(W) / compression of the weight at q =
//                    1/2 (t_digest.h, the k_1 scale function's bound).
// Reads the slots' weights, never compresses: O(slots), whatever the scan
// budget; with max_scan_bytes 0 (INFO's totals, taken with no key lock, and
// a digest's fields are not atomic) it reads nothing and reports zeros.
FilterHealth TDigestHealth(const TDigest& digest, uint64_t max_scan_bytes);
// max_scan_bytes 0 (Bloom, counting) likewise gives the filter's totals
// (capacity, items, scaling, over_capacity, saturated counters) and no
// layers, without reading any bits: what INFO's filterhealth section sums.

}  // namespace bloomgate
