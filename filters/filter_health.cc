#include "filters/filter_health.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <numbers>

namespace bloomgate {
namespace {

constexpr uint64_t kBlockWords = 8;  // 64-byte blocks in both Bloom layouts

// Non-zero lanes of `lane_bits`-bit counters in a word: OR each lane's bits
// down into its lowest bit, then count those.
uint32_t NonZeroLanes(uint64_t word, uint32_t lane_bits) {
  if (lane_bits == 1) return static_cast<uint32_t>(std::popcount(word));
  uint64_t folded = word;
  for (uint32_t shift = lane_bits / 2; shift >= 1; shift /= 2) folded |= folded >> shift;
  const uint64_t low_bits = lane_bits == 4 ? 0x1111111111111111ull : 0x0101010101010101ull;
  return static_cast<uint32_t>(std::popcount(folded & low_bits));
}

struct ScanResult {
  uint64_t cells_set = 0;  // extrapolated to the whole layer
  double fp = 0;
  bool sampled = false;
  uint64_t bytes = 0;
};

// Reads blocks of `words` (relaxed: a statistic read while adds may run;
// nothing is published through these bits) and measures the fill and the
// implied FP rate, reading at most `max_blocks` evenly spaced blocks.
ScanResult ScanBlocks(const std::atomic<uint64_t>* words, uint64_t num_blocks,
                      uint32_t block_cells, uint32_t lane_bits, uint32_t probes,
                      uint64_t max_blocks) {
  ScanResult result;
  if (num_blocks == 0) return result;
  max_blocks = std::max<uint64_t>(1, max_blocks);
  // Over the budget, read evenly spaced runs of kRunBlocks consecutive
  // blocks (one 4 KiB page each) rather than single blocks: sequential reads
  // within a page, one TLB miss per run. Single blocks 7 apart cost 39 ms of
  // CPU for 16 MiB of a 120 MB filter; runs cost 10.6 ms (filter_health.h).
  constexpr uint64_t kRunBlocks = 64;
  uint64_t runs = 1;
  uint64_t run_blocks = num_blocks;
  uint64_t step = num_blocks;
  if (max_blocks < num_blocks) {
    result.sampled = true;
    run_blocks = std::min(kRunBlocks, max_blocks);
    runs = std::max<uint64_t>(1, max_blocks / run_blocks);
    step = num_blocks / runs;  // >= run_blocks, as runs * run_blocks <= max_blocks < num_blocks
  }
  uint64_t scanned = 0;
  uint64_t set = 0;
  double fp_sum = 0;
  for (uint64_t run = 0; run < runs; ++run) {
    const uint64_t first = run * step;
    const uint64_t end = std::min(num_blocks, first + run_blocks);
    for (uint64_t block = first; block < end; ++block) {
      uint32_t block_set = 0;
      for (uint64_t w = 0; w < kBlockWords; ++w) {
        block_set += NonZeroLanes(words[block * kBlockWords + w].load(std::memory_order_relaxed),
                                  lane_bits);
      }
      set += block_set;
      fp_sum += std::pow(static_cast<double>(block_set) / block_cells, probes);
      ++scanned;
    }
  }
  result.bytes = scanned * kBlockWords * 8;
  result.cells_set = result.sampled ? static_cast<uint64_t>(static_cast<double>(set) *
                                                            static_cast<double>(num_blocks) /
                                                            static_cast<double>(scanned))
                                    : set;
  result.fp = fp_sum / static_cast<double>(scanned);
  return result;
}

// The share of the scan budget a layer of `layer_bytes` gets: all of it
// when everything fits, else in proportion to its size.
uint64_t BlocksAllowed(uint64_t layer_bytes, uint64_t total_bytes, uint64_t max_scan_bytes) {
  const uint64_t blocks = layer_bytes / (kBlockWords * 8);
  if (total_bytes <= max_scan_bytes) return blocks;
  const double share = static_cast<double>(layer_bytes) / static_cast<double>(total_bytes);
  return static_cast<uint64_t>(share * static_cast<double>(max_scan_bytes) / (kBlockWords * 8));
}

// Whether a lookup at generation `at` asks generation `generation` of a
// window of `generations` (window_generations.h's Live: g <= at <= g + n).
bool LiveAt(uint64_t generation, uint64_t at, uint32_t generations) {
  return generation <= at && generation + generations >= at;
}

void Finish(FilterHealth* health, bool can_grow) {
  // log(P(no layer answers)) = sum log1p(-fp): exact for tiny rates, where
  // 1 - prod(1 - fp) rounds to 0 (filter_health.h).
  double log_none = 0.0;
  for (const LayerHealth& layer : health->layers) {
    log_none += std::log1p(-layer.fp_rate_now);
    health->saturated += layer.saturated;
  }
  health->fp_rate_now = -std::expm1(log_none);
  health->over_capacity = !can_grow && health->items > health->capacity;
  health->full = !can_grow && health->items >= health->capacity;
}

}  // namespace

FilterHealth BloomHealth(const ScalableBloomFilter& filter, uint64_t max_scan_bytes) {
  FilterHealth health;
  health.fp_rate_design = filter.error_rate();
  health.scaling = filter.scaling();
  health.capacity = filter.capacity();
  health.items = filter.items();
  const std::vector<BloomLayerInfo> infos =
      max_scan_bytes == 0 ? std::vector<BloomLayerInfo>{} : filter.Layers();
  uint64_t total_bytes = 0;
  for (const BloomLayerInfo& info : infos) total_bytes += info.bytes;
  for (uint32_t i = 0; i < infos.size() && i < filter.num_layers(); ++i) {
    const BloomLayer& cells = filter.layer(i);
    ScanResult scan = ScanBlocks(cells.words(), cells.num_blocks(), BlockedBloom::kBlockBits,
                                 /*lane_bits=*/1, cells.probes(),
                                 BlocksAllowed(cells.bytes(), total_bytes, max_scan_bytes));
    LayerHealth layer;
    layer.capacity = infos[i].capacity;
    layer.items = infos[i].items;
    layer.cells = cells.bits();
    layer.cells_set = scan.cells_set;
    layer.fill_ratio = static_cast<double>(scan.cells_set) / static_cast<double>(layer.cells);
    layer.fp_rate_design = infos[i].error_rate;
    layer.fp_rate_now = scan.fp;
    layer.sampled = scan.sampled;
    health.bytes_scanned += scan.bytes;
    health.layers.push_back(layer);
  }
  // A scaling filter grows a layer when the newest is full; only a
  // non-scaling one keeps taking items past its capacity (and a scaling
  // one at kMaxBloomLayers, which refuses adds instead).
  Finish(&health, /*can_grow=*/filter.scaling());
  return health;
}

FilterHealth WindowedBloomHealth(const WindowedBloomFilter& filter, int64_t now_ms,
                                 uint64_t max_scan_bytes) {
  FilterHealth health;
  health.fp_rate_design = filter.error_rate();
  health.scaling = true;
  health.windowed = true;
  // MayContain's generation: never behind one an add already made current.
  const uint64_t at = std::max(filter.GenerationAt(now_ms), filter.current_generation());
  filter.WithSlots([&](const std::vector<WindowSlotInfo>& slots) {
    // The scan budget is shared out evenly over the generations.
    const uint64_t share = max_scan_bytes / slots.size() + (max_scan_bytes != 0 ? 1 : 0);
    for (const WindowSlotInfo& slot : slots) {
      if (!slot.present || !LiveAt(slot.generation, at, filter.generations())) continue;
      FilterHealth one = BloomHealth(*slot.filter, share);
      for (LayerHealth& layer : one.layers) layer.generation = slot.generation;
      health.capacity += one.capacity;
      health.items += one.items;
      health.bytes_scanned += one.bytes_scanned;
      health.layers.insert(health.layers.end(), one.layers.begin(), one.layers.end());
    }
    return 0;
  });
  // Over all live generations: a lookup asks each of them.
  Finish(&health, /*can_grow=*/true);
  return health;
}

FilterHealth CountingBloomHealth(const CountingBloomFilter& filter, uint64_t max_scan_bytes) {
  FilterHealth health;
  health.fp_rate_design = filter.error_rate();
  health.scaling = filter.scaling();
  health.capacity = filter.capacity();
  health.items = filter.items();
  const std::vector<CountingBloomLayerInfo> infos = filter.Layers();
  if (max_scan_bytes == 0) {
    for (const CountingBloomLayerInfo& info : infos) health.saturated += info.saturated_counters;
    health.over_capacity = !filter.scaling() && health.items > health.capacity;
    health.full = !filter.scaling() && health.items >= health.capacity;
    return health;
  }
  uint64_t total_bytes = 0;
  for (const CountingBloomLayerInfo& info : infos) total_bytes += info.bytes;
  for (uint32_t i = 0; i < infos.size() && i < filter.num_layers(); ++i) {
    const BlockedCountingBloom& cells = filter.layer(i);
    ScanResult scan = ScanBlocks(cells.words(), cells.num_blocks(), cells.block_cells(),
                                 cells.counter_bits(), cells.probes(),
                                 BlocksAllowed(cells.bytes(), total_bytes, max_scan_bytes));
    LayerHealth layer;
    layer.capacity = infos[i].capacity;
    layer.items = infos[i].items;
    layer.cells = cells.cells();
    layer.cells_set = scan.cells_set;
    layer.fill_ratio = static_cast<double>(scan.cells_set) / static_cast<double>(layer.cells);
    layer.fp_rate_design = infos[i].error_rate;
    layer.fp_rate_now = scan.fp;
    layer.saturated = infos[i].saturated_counters;
    layer.sampled = scan.sampled;
    health.bytes_scanned += scan.bytes;
    health.layers.push_back(layer);
  }
  Finish(&health, /*can_grow=*/filter.scaling());
  return health;
}

FilterHealth WindowedCountingBloomHealth(const WindowedCountingBloomFilter& filter,
                                         int64_t now_ms, uint64_t max_scan_bytes) {
  FilterHealth health;
  health.fp_rate_design = filter.error_rate();
  health.scaling = true;
  health.windowed = true;
  const uint64_t at = filter.LookupAt(now_ms);
  filter.WithSlots([&](const std::vector<WindowCountingSlotInfo>& slots) {
    // As WindowedBloomHealth: the scan budget shared over the generations.
    const uint64_t share = max_scan_bytes / slots.size() + (max_scan_bytes != 0 ? 1 : 0);
    for (const WindowCountingSlotInfo& slot : slots) {
      if (!slot.present || !LiveAt(slot.generation, at, filter.generations())) continue;
      FilterHealth one = CountingBloomHealth(*slot.filter, share);
      for (LayerHealth& layer : one.layers) layer.generation = slot.generation;
      health.capacity += one.capacity;
      health.items += one.items;
      if (one.layers.empty()) health.saturated += one.saturated;  // unscanned; else Finish sums
      health.bytes_scanned += one.bytes_scanned;
      health.layers.insert(health.layers.end(), one.layers.begin(), one.layers.end());
    }
    return 0;
  });
  Finish(&health, /*can_grow=*/true);
  return health;
}

FilterHealth CuckooHealth(const CuckooFilter& filter, bool per_sub_filter) {
  FilterHealth health;
  const uint32_t b = filter.bucket_size();
  // At full load: 2 x b / 255 per sub-filter (cuckoo_filter.h).
  const double full_fp = 2.0 * b / 255.0;
  health.fp_rate_design = full_fp;
  health.scaling = filter.scaling();
  health.items = filter.items();
  if (!per_sub_filter) {
    // Without the per-sub-filter occupancy, the overall load stands for
    // each sub-filter's: exact with one sub-filter, an estimate otherwise.
    health.capacity = filter.total_buckets() * b;
    const double load = health.capacity == 0 ? 0.0
                                              : static_cast<double>(health.items) /
                                                    static_cast<double>(health.capacity);
    health.fp_rate_now = std::min(1.0, full_fp * load * filter.num_filters());
    return health;
  }
  for (const CuckooSubFilterInfo& sub : filter.SubFilters()) {
    LayerHealth layer;
    layer.cells = sub.num_buckets * b;
    layer.capacity = layer.cells;
    layer.items = sub.occupied;
    layer.cells_set = sub.occupied;
    layer.fill_ratio = static_cast<double>(sub.occupied) / static_cast<double>(layer.cells);
    layer.fp_rate_design = full_fp;
    layer.fp_rate_now = std::min(1.0, full_fp * layer.fill_ratio);
    health.capacity += layer.capacity;
    health.layers.push_back(layer);
  }
  // A cuckoo filter refuses inserts when full ("Filter is full"): its FP
  // rate is bounded by its design, never over capacity.
  Finish(&health, /*can_grow=*/true);
  return health;
}

FilterHealth TDigestHealth(const TDigest& digest, uint64_t max_scan_bytes) {
  FilterHealth health;
  health.scaling = true;  // never refuses for room: it compresses
  // The totals' call (INFO) holds no key lock, and no field of a digest is
  // atomic (its writers hold the key exclusively): it reads nothing.
  if (max_scan_bytes == 0) return health;
  health.capacity = static_cast<uint64_t>(digest.capacity());
  health.items = digest.nodes();
  const double weight = static_cast<double>(digest.total_weight());
  if (weight > 1) {
    health.fp_rate_design =
        std::numbers::pi / 4 * std::log(weight) / static_cast<double>(digest.compression());
  }
  int64_t widest = 0;
  for (uint32_t i = 0; i < digest.nodes(); ++i) widest = std::max(widest, digest.weight_at(i));
  if (weight > 0) health.fp_rate_now = static_cast<double>(widest) / (2 * weight);
  LayerHealth layer;
  layer.capacity = health.capacity;
  layer.items = health.items;
  layer.cells = health.capacity;
  layer.cells_set = digest.merged_nodes();
  layer.fill_ratio = static_cast<double>(health.items) / static_cast<double>(health.capacity);
  layer.fp_rate_design = health.fp_rate_design;
  layer.fp_rate_now = health.fp_rate_now;
  health.bytes_scanned = uint64_t{digest.nodes()} * sizeof(int64_t);  // the weights
  health.layers.push_back(layer);
  return health;
}

}  // namespace bloomgate
