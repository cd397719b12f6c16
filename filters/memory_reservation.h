#pragma once

#include <cstdint>

#include "filters/admission.h"
#include "filters/filter_status.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/memory_refusal.h"

namespace bloomgate::internal {

// Small helpers shared by the filters' Create()/growth paths, which must check
// every limit before allocating and leave nothing reserved on failure.

inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

inline uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t product;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

// Whether a filter of `total` bytes is over limits.max_filter_bytes (0: no
// cap), for a write the limits judge (filters/admission.h).
inline bool OverFilterCap(uint64_t total, const FilterLimits& limits) {
  return limits.max_filter_bytes != 0 && total > limits.max_filter_bytes && LimitsJudge();
}

// The one memory check of every creation and growth: `bytes` more for a
// filter that holds `current_bytes` must keep it within
// limits.max_filter_bytes (0: no cap) -> kFilterMemoryLimit, then fit the
// budget (may be nullptr) -> kOutOfMemory; on kOk the bytes are reserved.
// A refusal is described in *refusal when given; nothing stays reserved.
// A replay (AsRecordedScope) skips the cap; the budget lets it past its limit.
inline FilterStatus CheckAndReserve(uint64_t bytes, uint64_t current_bytes,
                                    const FilterLimits& limits, MemoryBudget* budget,
                                    MemoryRefusal* refusal) {
  const uint64_t total = SaturatingAdd(current_bytes, bytes);
  if (OverFilterCap(total, limits)) {
    if (refusal != nullptr) {
      *refusal = {MemoryRefusal::Limit::kFilterCap, total, limits.max_filter_bytes, 0};
    }
    return FilterStatus::kFilterMemoryLimit;
  }
  uint64_t used = 0;
  if (budget != nullptr && !budget->TryReserve(bytes, &used)) {
    if (refusal != nullptr) *refusal = {MemoryRefusal::Limit::kBudget, bytes, budget->limit(), used};
    return FilterStatus::kOutOfMemory;
  }
  return FilterStatus::kOk;
}

// A size no filter can have (no allocator could give it, or a count it
// saturated): refused as over the cap, whatever the cap is.
inline FilterStatus AbsurdSize(uint64_t bytes, const FilterLimits& limits,
                               MemoryRefusal* refusal) {
  if (refusal != nullptr) {
    *refusal = {MemoryRefusal::Limit::kFilterCap, bytes, limits.max_filter_bytes, 0};
  }
  return FilterStatus::kFilterMemoryLimit;
}

// A failed allocation of `bytes` (new returned null, or a size no allocator
// can give), as a refusal.
inline FilterStatus AllocationFailed(uint64_t bytes, MemoryRefusal* refusal) {
  if (refusal != nullptr) *refusal = {MemoryRefusal::Limit::kAllocation, bytes, 0, 0};
  return FilterStatus::kOutOfMemory;
}

// Bytes taken from a MemoryBudget (which may be nullptr: no shared cap), given
// back on scope exit unless Keep() is called once the allocation succeeded.
class PendingReservation {
 public:
  PendingReservation(MemoryBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
  ~PendingReservation() {
    if (budget_ != nullptr) budget_->Release(bytes_);
  }
  PendingReservation(const PendingReservation&) = delete;
  PendingReservation& operator=(const PendingReservation&) = delete;
  void Keep() { budget_ = nullptr; }

 private:
  MemoryBudget* budget_;
  uint64_t bytes_;
};

}  // namespace bloomgate::internal
