#include "filters/t_digest.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "filters/memory_reservation.h"

namespace bloomgate {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The weighted mean of two values, clamped between them (rounding must not
// leave the interval the two centroids span).
double WeightedAverage(double x1, double w1, double x2, double w2) {
  if (x1 > x2) {
    std::swap(x1, x2);
    std::swap(w1, w2);
  }
  const double x = (x1 * w1 + x2 * w2) / (w1 + w2);
  return std::max(x1, std::min(x, x2));
}

bool AddFits(int64_t a, int64_t b) { return a <= INT64_MAX - b; }  // a, b >= 0

}  // namespace

uint64_t TDigest::BytesFor(int64_t compression) {
  return sizeof(TDigest) + static_cast<uint64_t>(CapacityFor(compression)) * 16;
}

TDigest::TDigest(int64_t compression, uint64_t bytes, MemoryBudget* budget,
                 std::unique_ptr<double[]> means, std::unique_ptr<int64_t[]> weights)
    : compression_(compression),
      cap_(CapacityFor(compression)),
      memory_bytes_(bytes),
      budget_(budget),
      means_(std::move(means)),
      weights_(std::move(weights)) {
  Reset();
}

TDigest::~TDigest() {
  if (budget_ != nullptr) budget_->Release(memory_bytes_);
}

FilterStatus TDigest::Create(int64_t compression, const FilterLimits& limits, MemoryBudget* budget,
                             std::unique_ptr<TDigest>* out, MemoryRefusal* refusal) {
  out->reset();
  if (compression < 1 || compression > kMaxCompression) return FilterStatus::kInvalidOptions;
  const uint64_t bytes = BytesFor(compression);
  if (FilterStatus s = internal::CheckAndReserve(bytes, 0, limits, budget, refusal);
      s != FilterStatus::kOk) {
    return s;
  }
  internal::PendingReservation reservation(budget, bytes);
  const size_t cap = static_cast<size_t>(CapacityFor(compression));
  std::unique_ptr<double[]> means(new (std::nothrow) double[cap]());
  std::unique_ptr<int64_t[]> weights(new (std::nothrow) int64_t[cap]());
  if (means == nullptr || weights == nullptr) return internal::AllocationFailed(bytes, refusal);
  std::unique_ptr<TDigest> digest(new (std::nothrow) TDigest(
      compression, bytes, budget, std::move(means), std::move(weights)));
  if (digest == nullptr) return internal::AllocationFailed(bytes, refusal);
  reservation.Keep();  // the destructor releases memory_bytes_ from here on
  *out = std::move(digest);
  return FilterStatus::kOk;
}

void TDigest::Reset() {
  // td_reset's sentinels: any first sample is below min and above max.
  min_ = DBL_MAX;
  max_ = -DBL_MAX;
  merged_nodes_ = 0;
  unmerged_nodes_ = 0;
  merged_weight_ = 0;
  unmerged_weight_ = 0;
  total_compressions_ = 0;
}

TDigest::AddStatus TDigest::Add(double value) {
  if (!std::isfinite(value)) return AddStatus::kNotFinite;
  return AddCentroid(value, 1);
}

TDigest::AddStatus TDigest::AddCentroid(double mean, int64_t weight) {
  if (!AddFits(total_weight(), weight)) return AddStatus::kOverflow;
  if (nodes() >= cap_ - 1) Compress();
  // Compressing n >= cap - 1 slots leaves far fewer (the k_1 bound keeps
  // about pi x compression / 2 centroids); the check keeps the arrays safe.
  if (nodes() >= cap_) return AddStatus::kOverflow;
  min_ = std::min(min_, mean);
  max_ = std::max(max_, mean);
  const uint32_t at = nodes();
  means_[at] = mean;
  weights_[at] = weight;
  ++unmerged_nodes_;
  unmerged_weight_ += weight;
  return AddStatus::kOk;
}

bool TDigest::Compress() {
  if (unmerged_nodes_ == 0) return false;
  const uint32_t n = nodes();
  // A stable sort: equal means keep their slot order, so a replay sorts the
  // same way (t-digest-c's quicksort orders ties by its pivots instead).
  std::vector<std::pair<double, int64_t>> slots(n);
  for (uint32_t i = 0; i < n; ++i) slots[i] = {means_[i], weights_[i]};
  std::stable_sort(slots.begin(), slots.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (uint32_t i = 0; i < n; ++i) {
    means_[i] = slots[i].first;
    weights_[i] = slots[i].second;
  }
  const double total = static_cast<double>(merged_weight_) + static_cast<double>(unmerged_weight_);
  uint32_t cur = 0;
  if (total > 1) {
    const double normalizer =
        static_cast<double>(compression_) / (2 * kPi * total * std::log(total));
    double weight_so_far = 0;
    for (uint32_t i = 1; i < n; ++i) {
      const double proposed = static_cast<double>(weights_[cur]) + static_cast<double>(weights_[i]);
      const double z = proposed * normalizer;
      const double q0 = weight_so_far / total;
      const double q2 = (weight_so_far + proposed) / total;
      if (z <= q0 * (1 - q0) && z <= q2 * (1 - q2)) {
        weights_[cur] += weights_[i];
        const double delta = means_[i] - means_[cur];
        means_[cur] += delta * static_cast<double>(weights_[i]) / static_cast<double>(weights_[cur]);
      } else {
        weight_so_far += static_cast<double>(weights_[cur]);
        ++cur;
        weights_[cur] = weights_[i];
        means_[cur] = means_[i];
      }
      if (cur != i) {
        weights_[i] = 0;
        means_[i] = 0;
      }
    }
  } else {
    cur = n - 1;  // a single sample: nothing to join
  }
  merged_nodes_ = cur + 1;
  merged_weight_ += unmerged_weight_;
  unmerged_nodes_ = 0;
  unmerged_weight_ = 0;
  ++total_compressions_;
  return true;
}

bool TDigest::CanAbsorb(std::span<TDigest* const> from) const {
  int64_t total = total_weight();
  for (const TDigest* d : from) {
    if (!AddFits(total, d->total_weight())) return false;
    total += d->total_weight();
  }
  return true;
}

TDigest::AddStatus TDigest::MergeFrom(TDigest& from) {
  Compress();
  from.Compress();
  if (!AddFits(total_weight(), from.total_weight())) return AddStatus::kOverflow;
  // `from` may be this digest: read its slots as they are before any add.
  const uint32_t count = from.nodes();
  std::vector<std::pair<double, int64_t>> centroids(count);
  for (uint32_t i = 0; i < count; ++i) centroids[i] = {from.means_[i], from.weights_[i]};
  for (const auto& [mean, weight] : centroids) {
    if (AddCentroid(mean, weight) != AddStatus::kOk) return AddStatus::kOverflow;
  }
  return AddStatus::kOk;
}

double TDigest::ValueAtIndex(double index, double* weight_so_far, uint32_t* node) const {
  const uint32_t n = merged_nodes_;
  const double left_weight = static_cast<double>(weights_[0]);
  if (left_weight > 1 && index < left_weight / 2) {
    // One sample sits at min: interpolate from it to the first centroid.
    return min_ + (index - 1) / (left_weight / 2 - 1) * (means_[0] - min_);
  }
  if (index > static_cast<double>(merged_weight_ - 1)) return max_;
  const double right_weight = static_cast<double>(weights_[n - 1]);
  const double right_mean = means_[n - 1];
  const double weight_d = static_cast<double>(merged_weight_);
  if (right_weight > 1 && weight_d - index <= right_weight / 2) {
    return max_ - (weight_d - index - 1) / (right_weight / 2 - 1) * (max_ - right_mean);
  }
  for (; *node + 1 < n; ++*node) {
    const uint32_t i = *node;
    const double w = static_cast<double>(weights_[i]);
    const double w_next = static_cast<double>(weights_[i + 1]);
    const double dw = (w + w_next) / 2;
    if (*weight_so_far + dw > index) {
      // Centroids i and i + 1 bracket the index; a weight-1 centroid is a
      // point, so the half of it nearest the index is not interpolated.
      double left_unit = 0;
      if (w == 1) {
        if (index - *weight_so_far < 0.5) return means_[i];
        left_unit = 0.5;
      }
      double right_unit = 0;
      if (w_next == 1) {
        if (*weight_so_far + dw - index <= 0.5) return means_[i + 1];
        right_unit = 0.5;
      }
      const double z1 = index - *weight_so_far - left_unit;
      const double z2 = *weight_so_far + dw - index - right_unit;
      return WeightedAverage(means_[i], z2, means_[i + 1], z1);
    }
    *weight_so_far += dw;
  }
  const double z1 = index - weight_d - right_weight / 2.0;
  const double z2 = right_weight / 2 - z1;
  return WeightedAverage(right_mean, z1, max_, z2);
}

void TDigest::Quantiles(std::span<const double> quantiles, std::span<double> out) {
  Compress();
  const uint32_t n = merged_nodes_;
  double weight_so_far = n > 0 ? static_cast<double>(weights_[0]) / 2 : 0;
  uint32_t node = 0;
  for (size_t i = 0; i < quantiles.size(); ++i) {
    const double q = quantiles[i];
    if (n == 0) {
      out[i] = kNaN;
    } else if (n == 1) {
      out[i] = (q < 0 || q > 1) ? kNaN : means_[0];
    } else {
      out[i] = ValueAtIndex(q * static_cast<double>(merged_weight_), &weight_so_far, &node);
    }
  }
}

double TDigest::Quantile(double q) {
  Compress();
  if (q < 0 || q > 1 || merged_nodes_ == 0) return kNaN;
  if (merged_nodes_ == 1) return means_[0];
  const double index = q * static_cast<double>(merged_weight_);
  if (index < 1) return min_;
  double weight_so_far = static_cast<double>(weights_[0]) / 2;
  uint32_t node = 0;
  return ValueAtIndex(index, &weight_so_far, &node);
}

double TDigest::Cdf(double value) {
  Compress();
  const uint32_t n = merged_nodes_;
  if (n == 0) return kNaN;
  if (value < min_) return 0;
  if (value > max_) return 1;
  if (n == 1) {
    const double width = max_ - min_;
    return value - min_ <= width ? 0.5 : (value - min_) / width;
  }
  const double total = static_cast<double>(merged_weight_);
  const double left_mean = means_[0];
  const double left_weight = static_cast<double>(weights_[0]);
  if (value < left_mean) {
    const double width = left_mean - min_;
    if (!(width > 0)) return 0;
    if (value == min_) return 0.5 / total;  // the sample at min
    return (1 + (value - min_) / width * (left_weight / 2 - 1)) / total;
  }
  const double right_mean = means_[n - 1];
  const double right_weight = static_cast<double>(weights_[n - 1]);
  if (value > right_mean) {
    const double width = max_ - right_mean;
    if (!(width > 0)) return 1;
    if (value == max_) return 1 - 0.5 / total;  // the sample at max
    return 1 - (1 + (max_ - value) / width * (right_weight / 2 - 1)) / total;
  }
  double weight_so_far = 0;
  for (uint32_t it = 0; it + 1 < n; ++it) {
    if (means_[it] == value) {
      // Every centroid at exactly `value` counts half.
      double dw = 0;
      while (it < n && means_[it] == value) {
        dw += static_cast<double>(weights_[it]);
        ++it;
      }
      return (weight_so_far + dw / 2) / total;
    }
    if (means_[it] <= value && value < means_[it + 1]) {
      const double w = static_cast<double>(weights_[it]);
      const double w_next = static_cast<double>(weights_[it + 1]);
      const double mean = means_[it];
      const double mean_next = means_[it + 1];
      if (mean_next - mean > 0) {
        double left_excluded = 0;
        double right_excluded = 0;
        if (w == 1) {
          if (w_next == 1) return (weight_so_far + 1) / total;  // two points
          left_excluded = 0.5;
        } else if (w_next == 1) {
          right_excluded = 0.5;
        }
        const double dw = (w + w_next) / 2;
        const double span = dw - left_excluded - right_excluded;
        const double base = weight_so_far + w / 2 + left_excluded;
        return (base + span * (value - mean) / (mean_next - mean)) / total;
      }
      return (weight_so_far + (w + w_next) / 2) / total;
    }
    weight_so_far += static_cast<double>(weights_[it]);
  }
  return 1 - 0.5 / total;
}

double TDigest::TrimmedMeanOfWeights(double low_weight, double high_weight) const {
  double done = 0;
  double sum = 0;
  double count = 0;
  for (uint32_t i = 0; i < merged_nodes_; ++i) {
    const double w = static_cast<double>(weights_[i]);
    double take = w;
    take -= std::min(std::max(0.0, low_weight - done), take);
    take = std::min(std::max(0.0, high_weight - done), take);
    done += w;
    sum += means_[i] * take;
    count += take;
    if (done >= high_weight) break;
  }
  return sum / count;
}

double TDigest::TrimmedMean(double low_cut, double high_cut) {
  Compress();
  if (merged_nodes_ == 0 || low_cut < 0 || low_cut > 1 || high_cut < 0 || high_cut > 1) {
    return kNaN;
  }
  if (merged_nodes_ == 1) return means_[0];
  const double weight = static_cast<double>(merged_weight_);
  return TrimmedMeanOfWeights(std::floor(weight * low_cut), std::ceil(weight * high_cut));
}

bool TDigest::Restore(const State& s) {
  const uint64_t n = uint64_t{s.merged_nodes} + s.unmerged_nodes;
  if (n > static_cast<uint64_t>(cap_) || s.means.size() != n || s.weights.size() != n) return false;
  if (s.merged_weight < 0 || s.unmerged_weight < 0 || !AddFits(s.merged_weight, s.unmerged_weight) ||
      s.total_compressions < 0) {
    return false;
  }
  if (n == 0) {
    if (s.min != DBL_MAX || s.max != -DBL_MAX || s.merged_weight != 0 || s.unmerged_weight != 0) {
      return false;
    }
  } else if (!std::isfinite(s.min) || !std::isfinite(s.max) || s.min > s.max) {
    return false;
  }
  int64_t sums[2] = {0, 0};
  for (uint64_t i = 0; i < n; ++i) {
    if (!std::isfinite(s.means[i]) || s.weights[i] < 1) return false;
    int64_t& sum = sums[i < s.merged_nodes ? 0 : 1];
    if (!AddFits(sum, s.weights[i])) return false;
    sum += s.weights[i];
  }
  if (sums[0] != s.merged_weight || sums[1] != s.unmerged_weight) return false;
  std::copy(s.means.begin(), s.means.end(), means_.get());
  std::copy(s.weights.begin(), s.weights.end(), weights_.get());
  min_ = s.min;
  max_ = s.max;
  merged_nodes_ = s.merged_nodes;
  unmerged_nodes_ = s.unmerged_nodes;
  merged_weight_ = s.merged_weight;
  unmerged_weight_ = s.unmerged_weight;
  total_compressions_ = s.total_compressions;
  return true;
}

void TDigest::SwapContents(TDigest& other) {
  std::swap(compression_, other.compression_);
  std::swap(cap_, other.cap_);
  std::swap(memory_bytes_, other.memory_bytes_);
  std::swap(means_, other.means_);
  std::swap(weights_, other.weights_);
  std::swap(min_, other.min_);
  std::swap(max_, other.max_);
  std::swap(merged_nodes_, other.merged_nodes_);
  std::swap(unmerged_nodes_, other.unmerged_nodes_);
  std::swap(merged_weight_, other.merged_weight_);
  std::swap(unmerged_weight_, other.unmerged_weight_);
  std::swap(total_compressions_, other.total_compressions_);
}

}  // namespace bloomgate
