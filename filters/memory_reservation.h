#pragma once

#include <cstdint>

#include "filters/memory_budget.h"

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
