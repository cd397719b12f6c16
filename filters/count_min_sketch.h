// A count-min sketch (our CMS.* family): depth rows of width 32-bit counters.
//
//   row r:  cell[r * width + 0] ... cell[r * width + width - 1]
//   an item's cell in row r (filters/sketch_scheme.h):
//     kRedisBloom  MurmurHash2(item, seed r) % width, as RedisBloom's cms.c,
//                  so overcounts fall on the same items as RedisBloom's
//     kNative      fastrange64(hash.lo + r * hash.hi, width) over the item's
//                  XXH3-128 KeyHash (Kirsch-Mitzenmacher double hashing):
//                  sketches saved before kRedisBloom existed
//
// Storage: two cells per 64-bit word, cell c in word c / 2, the low 32 bits
// for even c. The words' little-endian bytes are therefore the cells'
// little-endian u32s in order, which is the payload a snapshot writes.
//
// Semantics, as RedisBloom before Redis 8.12 (32-bit cells, rm_cms.c, cms.c):
//  - IncrBy(item, n), n >= 0: every one of the item's depth cells becomes
//    min(cell + n, 2^32 - 1) (saturating: a cell never wraps); the result is
//    the smallest of them after the add. RedisBloom replies "CMS: INCRBY
//    overflow" for an item whose result is 2^32 - 1, as the server does.
//  - Query(item): the smallest of the item's cells. Never below the item's
//    true count (until cells saturate); above it by at most e/width x total
//    with probability 1 - e^-depth (Cormode-Muthukrishnan), and by at most
//    2/width x total with probability 1 - 2^-depth (Markov per row; the bound
//    CMS.INITBYPROB sizes for, see DimensionsFor).
//  - total(): the sum of every increment, saturating at 2^63 - 1 so that it
//    always fits a RESP integer (CMS.INFO "count").
//
// Concurrency: IncrBy, Query and the accessors run concurrently from any
// threads with no lock. Each cell is updated by a compare-and-swap loop on
// its word, so no increment is ever lost; and because a saturating add of
// non-negative numbers gives min(sum, max) whatever the order, concurrent
// IncrBys leave the same cells (and total) as any serial order -- which is
// why a replay of the log in log order rebuilds the same sketch. Merge and
// the loader's writes need exclusive access (the server holds the key
// exclusively for CMS.MERGE, and a loaded sketch is not yet published).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "filters/filter_status.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/memory_refusal.h"
#include "filters/sketch_scheme.h"

namespace bloomgate {

class CountMinSketch {
 public:
  // Hashes unseeded (XXH3 seed 0), unlike the Bloom and cuckoo families: sketches
  // meant for CMS.MERGE must hash alike. Kept for the codecs' hash contract.
  static constexpr uint64_t hash_seed() { return 0; }

  static constexpr uint64_t kMaxCell = UINT32_MAX;  // RedisBloom's 32-bit cells
  static constexpr uint64_t kMaxTotal = INT64_MAX;  // a RESP integer
  // width x depth cells at most; 2^61 cells would be 8 EiB, so the byte caps
  // always bind first; the bound only keeps every size computation < 2^64.
  static constexpr uint64_t kMaxCells = uint64_t{1} << 61;

  // RedisBloom's CMS_DimFromProb: width = ceil(2 / error), depth =
  // ceil(log10(probability) / log10(0.5)), computed in single precision as
  // RedisBloom does (log10f), so CMS.INITBYPROB gives the same dimensions
  // (0.001, 0.01 -> 2000 x 7). error and probability in (0, 1). Returns false
  // when the width would not fit 64 bits (error below ~1e-19) or the depth
  // comes out 0 (a probability that is 1 in single precision).
  static bool DimensionsFor(double error, double probability, uint64_t* width, uint64_t* depth);

  // width, depth >= 1 and width x depth <= kMaxCells, else kInvalidOptions;
  // memory over limits.max_filter_bytes -> kFilterMemoryLimit; over the
  // budget or a failed allocation -> kOutOfMemory. Every cell 0.
  // A memory refusal is described in *refusal when given.
  static FilterStatus Create(uint64_t width, uint64_t depth, const FilterLimits& limits,
                             MemoryBudget* budget, std::unique_ptr<CountMinSketch>* out,
                             MemoryRefusal* refusal = nullptr,
                             SketchScheme scheme = SketchScheme::kNative);
  // For loaders: Create's checks, then total() as given (<= kMaxTotal, else
  // kInvalidOptions); the cells are filled through mutable_words().
  static FilterStatus Restore(uint64_t width, uint64_t depth, uint64_t total,
                              const FilterLimits& limits, MemoryBudget* budget,
                              std::unique_ptr<CountMinSketch>* out,
                              MemoryRefusal* refusal = nullptr,
                              SketchScheme scheme = SketchScheme::kNative);
  // Releases memory_bytes() back to the budget.
  ~CountMinSketch();
  CountMinSketch(const CountMinSketch&) = delete;
  CountMinSketch& operator=(const CountMinSketch&) = delete;

  // Adds `increment` to the item's cells (see above); returns the smallest
  // of them afterwards, kMaxCell when it saturated. Places the item by the
  // sketch's scheme.
  uint64_t IncrBy(std::string_view item, uint64_t increment);
  uint64_t Query(std::string_view item) const;
  // The same for a kNative sketch whose caller hashed the item already.
  uint64_t IncrBy(const KeyHash& h, uint64_t increment);
  uint64_t Query(const KeyHash& h) const;

  // Why Merge refused.
  enum class MergeStatus { kOk, kShapeMismatch, kOverflow };
  // dest = sum over i of weights[i] x sources[i], cell by cell and for the
  // total (RedisBloom's CMS.MERGE; weights may be negative). Every source
  // must have this sketch's width and depth (kShapeMismatch). A cell whose
  // sum falls outside [0, kMaxCell], or a total outside [0, kMaxTotal], or
  // any overflow on the way, refuses the whole merge (kOverflow, RedisBloom's
  // "CMS: MERGE overflow"). Nothing changes unless kOk. This sketch may be
  // one of the sources. Needs exclusive access to this sketch and no writer
  // on the sources.
  MergeStatus Merge(std::span<const CountMinSketch* const> sources,
                    std::span<const int64_t> weights);

  uint64_t width() const { return width_; }
  uint64_t depth() const { return depth_; }
  // CMS.MERGE adds cells position by position: only sketches of one scheme
  // hold an item at the same positions.
  SketchScheme scheme() const { return scheme_; }
  uint64_t total() const { return total_.load(std::memory_order_relaxed); }
  uint64_t cells() const { return width_ * depth_; }
  uint64_t cell(uint64_t index) const;  // for tests and Merge
  uint64_t num_words() const { return (cells() + 1) / 2; }
  const std::atomic<uint64_t>* words() const { return words_.get(); }
  std::atomic<uint64_t>* mutable_words() { return words_.get(); }
  // The sketch object and its cells: CMS MEMORY USAGE, the budget charge.
  uint64_t memory_bytes() const { return memory_bytes_; }
  static uint64_t BytesFor(uint64_t width, uint64_t depth);

 private:
  CountMinSketch(uint64_t width, uint64_t depth, uint64_t bytes, MemoryBudget* budget,
                 std::unique_ptr<std::atomic<uint64_t>[]> words, SketchScheme scheme);
  uint64_t CellIndex(const KeyHash& h, uint64_t row) const;
  uint64_t RedisBloomCellIndex(std::string_view item, uint64_t row) const;
  // The increment and the query over cells chosen by cell_of(row).
  template <typename CellOf>
  uint64_t IncrByCells(CellOf cell_of, uint64_t increment);
  template <typename CellOf>
  uint64_t QueryCells(CellOf cell_of) const;

  const uint64_t width_;
  const uint64_t depth_;
  const uint64_t memory_bytes_;
  MemoryBudget* const budget_;
  const SketchScheme scheme_;
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
  std::atomic<uint64_t> total_{0};
};

}  // namespace bloomgate
