#include "filters/grow_stripes.h"

#include <array>

namespace bloomgate::internal {

BlockedShape GrowStripe::Shape(ShapeRule rule, double error_rate, uint64_t capacity,
                               uint32_t block_cells) {
  // A hit is the same input (a NaN rate never equals itself: recomputed).
  const bool hit = rule_ == rule && capacity_ == capacity && block_cells_ == block_cells &&
                   error_rate_ == error_rate;
  if (!hit) {
    shape_ = rule(error_rate, capacity, block_cells);
    rule_ = rule;
    error_rate_ = error_rate;
    capacity_ = capacity;
    block_cells_ = block_cells;
  }
  return shape_;
}

GrowStripe& GrowStripeFor(const void* chain) {
  // 64 stripes: with a handful of threads growing at once, two rarely meet.
  // Never destroyed: a chain freed during static destruction still finds
  // its stripe (Grow is not called then, but the table costs 64 x ~96 bytes
  // for the process's lifetime either way).
  static constexpr int kStripeBits = 6;
  static auto* const stripes = new std::array<GrowStripe, size_t{1} << kStripeBits>;
  // Chains are heap objects of >= 64 bytes: drop the low bits, mix the rest
  // (Fibonacci hashing, as Keyspace::CaptureStripe).
  const auto address = reinterpret_cast<uintptr_t>(chain) >> 6;
  return (*stripes)[(address * 0x9e3779b97f4a7c15ull) >> (64 - kStripeBits)];
}

}  // namespace bloomgate::internal
