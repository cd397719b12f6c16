// A merging t-digest (Dunning and Ertl), answering as RedisBloom 2.4's
// TDIGEST.* does (its t-digest-c library): the same centroid capacity, the
// same compress rule and the same quantile, CDF and trimmed-mean
// interpolation, so a digest fed the same values gives the same doubles.
//
// State: `cap` = 6 x compression + 10 centroid slots (compression 100: 610
// slots, 16 bytes each). The first merged_nodes slots are merged centroids
// sorted by mean; after them come unmerged_nodes values (or centroids of a
// merge) in arrival order. An add that finds cap - 1 slots in use compresses
// first, so memory is fixed by the compression, never by the adds.
//
// Compress: sort every slot by mean (stable), then walk left to right; with
// W the total weight and k = compression / (2 pi W ln W), the next centroid
// joins the current one iff (w_cur + w_next) x k <= q (1 - q) at both the
// quantile before the current centroid and the one after the joined pair
// (the k_1 scale function's size bound). Quantile, CDF and trimmed mean
// compress first (RedisBloom's td_quantile / td_cdf mutate the digest too),
// then interpolate between centroid midpoints, treating a weight-1 centroid
// as a point and the extremes as known samples at min and max.
//
// Not thread-safe: every call that can compress needs exclusive access (the
// server holds such keys exclusively); the const accessors may run together.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "filters/filter_status.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/memory_refusal.h"

namespace bloomgate {

class TDigest {
 public:
  // A digest hashes nothing; the seed the other families report is 0 here.
  static constexpr uint64_t hash_seed() { return 0; }

  static constexpr int64_t kDefaultCompression = 100;
  // t-digest-c's td_init refuses a capacity past INT_MAX: 6 c + 10 <= 2^31 - 1.
  static constexpr int64_t kMaxCompression = (INT32_MAX - 10) / 6;  // 357,913,939
  static constexpr int64_t CapacityFor(int64_t compression) { return 6 * compression + 10; }
  // The object and its two arrays of cap slots.
  static uint64_t BytesFor(int64_t compression);

  // compression in [1, kMaxCompression], else kInvalidOptions; memory over
  // limits.max_filter_bytes -> kFilterMemoryLimit; over the budget or a
  // failed allocation -> kOutOfMemory. Empty.
  static FilterStatus Create(int64_t compression, const FilterLimits& limits, MemoryBudget* budget,
                             std::unique_ptr<TDigest>* out, MemoryRefusal* refusal = nullptr);
  ~TDigest();
  TDigest(const TDigest&) = delete;
  TDigest& operator=(const TDigest&) = delete;

  // Why an add or a merge was refused (RedisBloom's "overflow detected").
  enum class AddStatus { kOk, kNotFinite, kOverflow };
  // Adds one sample of weight 1. A NaN or infinite value is refused; so is
  // a total weight past 2^63 - 1. Nothing changes unless kOk.
  AddStatus Add(double value);
  // Adds `from`'s centroids to this digest after compressing both
  // (RedisBloom's td_merge). Refuses, with nothing changed here, when the
  // total weight would pass 2^63 - 1; `from` is compressed either way.
  AddStatus MergeFrom(TDigest& from);
  // Whether MergeFrom of every digest in `from` (in order) would fit the
  // weight bound, checked before any of them is compressed.
  bool CanAbsorb(std::span<TDigest* const> from) const;
  // Empties the digest; compression and capacity stay (TDIGEST.RESET).
  void Reset();
  // Merges the unmerged slots; false when there were none (nothing changed).
  bool Compress();

  // Answers; each compresses first (so needs exclusive access). NaN on an
  // empty digest, as RedisBloom. `quantiles` ascending within one call
  // shares the walk over the centroids, as td_quantiles does.
  void Quantiles(std::span<const double> quantiles, std::span<double> out);
  double Quantile(double q);
  double Cdf(double value);
  // The mean of the samples between the two cuts (fractions of the weight,
  // 0 <= low < high <= 1).
  double TrimmedMean(double low_cut, double high_cut);

  int64_t compression() const { return compression_; }
  int64_t capacity() const { return cap_; }
  double min() const { return min_; }
  double max() const { return max_; }
  uint32_t merged_nodes() const { return merged_nodes_; }
  uint32_t unmerged_nodes() const { return unmerged_nodes_; }
  int64_t merged_weight() const { return merged_weight_; }
  int64_t unmerged_weight() const { return unmerged_weight_; }
  int64_t total_weight() const { return merged_weight_ + unmerged_weight_; }
  int64_t total_compressions() const { return total_compressions_; }
  uint32_t nodes() const { return merged_nodes_ + unmerged_nodes_; }
  // RedisBloom's TDIGEST.INFO "Memory usage": a pointer and two arrays of cap.
  int64_t redisbloom_memory_usage() const { return 8 + 16 * cap_; }
  uint64_t memory_bytes() const { return memory_bytes_; }

  // The slots in use, for the codec and tests.
  double mean_at(uint32_t i) const { return means_[i]; }
  int64_t weight_at(uint32_t i) const { return weights_[i]; }

  // For loaders: the whole state as a snapshot holds it. Checks every field
  // (finite means; weights >= 1 summing to the two totals; nodes <= cap;
  // min/max finite and ordered, or the empty digest's sentinels) and returns
  // false, changing nothing, if one is out of range.
  struct State {
    double min = 0;
    double max = 0;
    uint32_t merged_nodes = 0;
    uint32_t unmerged_nodes = 0;
    int64_t merged_weight = 0;
    int64_t unmerged_weight = 0;
    int64_t total_compressions = 0;
    std::span<const double> means;
    std::span<const int64_t> weights;
  };
  bool Restore(const State& state);

  // Exchanges everything but the budget (both must share it): TDIGEST.MERGE
  // builds its result apart and then swaps it under the key.
  void SwapContents(TDigest& other);

 private:
  TDigest(int64_t compression, uint64_t bytes, MemoryBudget* budget,
          std::unique_ptr<double[]> means, std::unique_ptr<int64_t[]> weights);
  AddStatus AddCentroid(double mean, int64_t weight);
  // td_internal_iterate_centroids_to_index: the value at `index` (a rank in
  // weight units), continuing a walk at *weight_so_far / *node.
  double ValueAtIndex(double index, double* weight_so_far, uint32_t* node) const;
  double TrimmedMeanOfWeights(double low_weight, double high_weight) const;

  int64_t compression_;
  int64_t cap_;
  uint64_t memory_bytes_;
  MemoryBudget* budget_;
  std::unique_ptr<double[]> means_;
  std::unique_ptr<int64_t[]> weights_;
  double min_;
  double max_;
  uint32_t merged_nodes_ = 0;
  uint32_t unmerged_nodes_ = 0;
  int64_t merged_weight_ = 0;
  int64_t unmerged_weight_ = 0;
  int64_t total_compressions_ = 0;
};

}  // namespace bloomgate
