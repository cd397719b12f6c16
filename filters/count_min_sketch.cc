#include "filters/count_min_sketch.h"

#include <cmath>
#include <new>
#include <utility>

#include "filters/memory_reservation.h"
#include "filters/murmur_hash2.h"

namespace bloomgate {
namespace {

using internal::PendingReservation;

// Lemire's fastrange: maps a 64-bit hash uniformly onto [0, n) without %.
inline uint64_t FastRange64(uint64_t hash, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(hash) * n) >> 64);
}

inline uint64_t LaneShift(uint64_t cell) { return (cell & 1) * 32; }

}  // namespace

bool CountMinSketch::DimensionsFor(double error, double probability, uint64_t* width,
                                   uint64_t* depth) {
  // RedisBloom: *width = ceil(2 / error); *depth = ceil(log10f(delta) /
  // log10f(0.5)). The float logs matter at the edges: 0.01 gives 6.64 -> 7 in
  // both precisions, but a probability of exactly 0.5^k can land either side
  // of k, and we follow RedisBloom there.
  const double w = std::ceil(2 / error);
  if (!(w >= 1) || w >= 18446744073709551616.0) return false;
  const double d = std::ceil(log10f(static_cast<float>(probability)) / log10f(0.5f));
  // A probability that rounds to 1 in single precision gives depth 0, which
  // RedisBloom refuses ("CMS: invalid init arguments"; its test uses
  // 0.9999999999999999), and so do we. One under float's smallest subnormal
  // (1.4e-45) rounds to 0, whose log is -inf: the depth would be +inf, which
  // no integer holds. The smallest float that is not 0 gives 149 rows, so
  // any finite depth is < kMaxCells.
  if (!(d >= 1) || !(d <= static_cast<double>(kMaxCells))) return false;
  *width = static_cast<uint64_t>(w);
  *depth = static_cast<uint64_t>(d);
  return true;
}

uint64_t CountMinSketch::BytesFor(uint64_t width, uint64_t depth) {
  const uint64_t words = (width * depth + 1) / 2;  // width * depth <= kMaxCells
  return sizeof(CountMinSketch) + words * sizeof(uint64_t);
}

FilterStatus CountMinSketch::Create(uint64_t width, uint64_t depth, const FilterLimits& limits,
                                    MemoryBudget* budget, std::unique_ptr<CountMinSketch>* out,
                                    MemoryRefusal* refusal, SketchScheme scheme) {
  return Restore(width, depth, /*total=*/0, limits, budget, out, refusal, scheme);
}

FilterStatus CountMinSketch::Restore(uint64_t width, uint64_t depth, uint64_t total,
                                     const FilterLimits& limits, MemoryBudget* budget,
                                     std::unique_ptr<CountMinSketch>* out,
                                     MemoryRefusal* refusal, SketchScheme scheme) {
  out->reset();
  if (width < 1 || depth < 1 || width > kMaxCells / depth || total > kMaxTotal) {
    return FilterStatus::kInvalidOptions;
  }
  const uint64_t bytes = BytesFor(width, depth);
  if (bytes > SIZE_MAX / 2) return internal::AbsurdSize(bytes, limits, refusal);
  if (FilterStatus s = internal::CheckAndReserve(bytes, 0, limits, budget, refusal);
      s != FilterStatus::kOk) {
    return s;
  }
  PendingReservation reservation(budget, bytes);
  const uint64_t words = (width * depth + 1) / 2;
  // Value-initialised: every cell starts at 0.
  std::unique_ptr<std::atomic<uint64_t>[]> cells(
      new (std::nothrow) std::atomic<uint64_t>[static_cast<size_t>(words)]());
  if (cells == nullptr) return internal::AllocationFailed(bytes, refusal);
  std::unique_ptr<CountMinSketch> sketch(
      new (std::nothrow) CountMinSketch(width, depth, bytes, budget, std::move(cells), scheme));
  if (sketch == nullptr) return internal::AllocationFailed(bytes, refusal);
  reservation.Keep();  // the destructor releases memory_bytes_ from here on
  sketch->total_.store(total, std::memory_order_relaxed);
  *out = std::move(sketch);
  return FilterStatus::kOk;
}

CountMinSketch::CountMinSketch(uint64_t width, uint64_t depth, uint64_t bytes,
                               MemoryBudget* budget,
                               std::unique_ptr<std::atomic<uint64_t>[]> words,
                               SketchScheme scheme)
    : width_(width), depth_(depth), memory_bytes_(bytes), budget_(budget), scheme_(scheme),
      words_(std::move(words)) {}

CountMinSketch::~CountMinSketch() {
  if (budget_ != nullptr) budget_->Release(memory_bytes_);
}

uint64_t CountMinSketch::CellIndex(const KeyHash& h, uint64_t row) const {
  return row * width_ + FastRange64(h.lo + row * h.hi, width_);
}

uint64_t CountMinSketch::RedisBloomCellIndex(std::string_view item, uint64_t row) const {
  // cms.c: (MurmurHash2(item, len, row) % width) + row * width. RedisBloom
  // passes the row as the 32-bit seed; rows past 2^32 (a sketch of 32 GiB
  // per column at least) wrap the seed as its C does.
  return row * width_ + MurmurHash2(item, static_cast<uint32_t>(row)) % width_;
}

uint64_t CountMinSketch::cell(uint64_t index) const {
  // Relaxed: a cell is a standalone counter; nothing else is published
  // through it.
  const uint64_t word = words_[index / 2].load(std::memory_order_relaxed);
  return (word >> LaneShift(index)) & kMaxCell;
}

uint64_t CountMinSketch::IncrBy(std::string_view item, uint64_t increment) {
  if (scheme_ == SketchScheme::kRedisBloom) {
    return IncrByCells([&](uint64_t row) { return RedisBloomCellIndex(item, row); }, increment);
  }
  return IncrBy(HashKey(item), increment);
}

uint64_t CountMinSketch::Query(std::string_view item) const {
  if (scheme_ == SketchScheme::kRedisBloom) {
    return QueryCells([&](uint64_t row) { return RedisBloomCellIndex(item, row); });
  }
  return Query(HashKey(item));
}

uint64_t CountMinSketch::IncrBy(const KeyHash& h, uint64_t increment) {
  return IncrByCells([&](uint64_t row) { return CellIndex(h, row); }, increment);
}

uint64_t CountMinSketch::Query(const KeyHash& h) const {
  return QueryCells([&](uint64_t row) { return CellIndex(h, row); });
}

template <typename CellOf>
uint64_t CountMinSketch::IncrByCells(CellOf cell_of, uint64_t increment) {
  uint64_t smallest = kMaxCell;
  for (uint64_t row = 0; row < depth_; ++row) {
    const uint64_t index = cell_of(row);
    std::atomic<uint64_t>& word = words_[index / 2];
    const uint64_t shift = LaneShift(index);
    // Relaxed CAS loop: the word's other lane may change under us (another
    // item's cell), which only retries; the cells guard no other data.
    uint64_t old_word = word.load(std::memory_order_relaxed);
    uint64_t updated;
    for (;;) {
      const uint64_t cell_value = (old_word >> shift) & kMaxCell;
      updated = increment >= kMaxCell - cell_value ? kMaxCell : cell_value + increment;
      if (updated == cell_value) break;  // saturated already, or +0
      const uint64_t new_word = (old_word & ~(kMaxCell << shift)) | (updated << shift);
      if (word.compare_exchange_weak(old_word, new_word, std::memory_order_relaxed,
                                     std::memory_order_relaxed)) {
        break;
      }
    }
    if (updated < smallest) smallest = updated;
  }
  // The total saturates at kMaxTotal, by the same argument commutatively.
  uint64_t old_total = total_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t new_total =
        increment >= kMaxTotal - old_total ? kMaxTotal : old_total + increment;
    if (new_total == old_total ||
        total_.compare_exchange_weak(old_total, new_total, std::memory_order_relaxed,
                                     std::memory_order_relaxed)) {
      break;
    }
  }
  return smallest;
}

template <typename CellOf>
uint64_t CountMinSketch::QueryCells(CellOf cell_of) const {
  uint64_t smallest = kMaxCell;
  for (uint64_t row = 0; row < depth_; ++row) {
    const uint64_t value = cell(cell_of(row));
    if (value < smallest) smallest = value;
  }
  return smallest;
}

CountMinSketch::MergeStatus CountMinSketch::Merge(std::span<const CountMinSketch* const> sources,
                                                  std::span<const int64_t> weights) {
  for (const CountMinSketch* source : sources) {
    if (source->width_ != width_ || source->depth_ != depth_) return MergeStatus::kShapeMismatch;
  }
  // Check everything before changing anything (RedisBloom's checkOverflow),
  // with exact 64-bit overflow checks: |cell x weight| can exceed 2^63.
  auto weighted_sum = [&](auto value_of, int64_t upper, int64_t* out) {
    int64_t sum = 0;
    for (size_t i = 0; i < sources.size(); ++i) {
      int64_t product;
      if (__builtin_mul_overflow(static_cast<int64_t>(value_of(*sources[i])), weights[i],
                                 &product) ||
          __builtin_add_overflow(sum, product, &sum)) {
        return false;
      }
    }
    if (sum < 0 || sum > upper) return false;
    *out = sum;
    return true;
  };
  int64_t new_total = 0;
  if (!weighted_sum([](const CountMinSketch& s) { return s.total(); },
                    static_cast<int64_t>(kMaxTotal), &new_total)) {
    return MergeStatus::kOverflow;
  }
  // Cell c of the result depends only on cell c of each source, so a first
  // pass checks every cell and a second writes them in place (this sketch
  // may itself be a source), with no copy of the cells.
  const uint64_t n = cells();
  auto merged_cell = [&](uint64_t c, int64_t* out) {
    return weighted_sum([c](const CountMinSketch& s) { return s.cell(c); },
                        static_cast<int64_t>(kMaxCell), out);
  };
  int64_t sum = 0;
  for (uint64_t c = 0; c < n; ++c) {
    if (!merged_cell(c, &sum)) return MergeStatus::kOverflow;
  }
  for (uint64_t w = 0; w < num_words(); ++w) {
    int64_t low = 0;
    int64_t high = 0;
    merged_cell(2 * w, &low);
    if (2 * w + 1 < n) merged_cell(2 * w + 1, &high);
    words_[w].store(static_cast<uint64_t>(low) | (static_cast<uint64_t>(high) << 32),
                    std::memory_order_relaxed);
  }
  total_.store(static_cast<uint64_t>(new_total), std::memory_order_relaxed);
  return MergeStatus::kOk;
}

}  // namespace bloomgate
