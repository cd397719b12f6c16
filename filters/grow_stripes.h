// The locks and the next-shape memo that LayerChain::Grow needs, kept in 64
// process-wide stripes instead of in every chain.
//
// Why: a std::mutex (40 bytes) and a cached next shape (40 bytes) in every
// chain would be 80 of a small filter's 729 bytes of MEMORY USAGE
// (`BF.RESERVE k 0.01 100`), for work a filter does once per layer it appends --
// at most 64 times in its life. Growth is rare and short (a reservation, a
// few allocations), so two filters meeting on one stripe cost one of them a
// short wait, never a wrong answer.
//
// The memo is keyed by everything the shape depends on (the sizing rule, the
// rate, the capacity, the cells per block), so a hit is the very shape the
// rule would compute, whichever chain asked before: it never goes stale when
// a chain is freed and another takes its address. Its job is the one the
// per-chain cache had: a chain stuck at a memory limit retries growth on
// every new item, and each retry must stay cheap. Two stuck chains that
// share a stripe evict each other's memo entry and recompute (a few hundred
// nanoseconds) -- slower, still correct.
#pragma once

#include <cstdint>
#include <mutex>

#include "filters/bloom_math.h"

namespace bloomgate::internal {

using ShapeRule = BlockedShape (*)(double error_rate, uint64_t capacity, uint32_t block_cells);

class GrowStripe {
 public:
  // Serialises growth of the chains on this stripe. Never held by readers,
  // never held while another stripe is taken.
  std::mutex& mutex() { return mutex_; }

  // rule(error_rate, capacity, block_cells), from the memo when the last
  // call on this stripe asked for the same. Call with mutex() held.
  BlockedShape Shape(ShapeRule rule, double error_rate, uint64_t capacity, uint32_t block_cells);

 private:
  std::mutex mutex_;
  // Guarded by mutex_. rule_ == nullptr: empty.
  ShapeRule rule_ = nullptr;
  double error_rate_ = 0;
  uint64_t capacity_ = 0;
  uint32_t block_cells_ = 0;
  BlockedShape shape_{};
};

// The stripe of the chain at `chain` (its address: fixed for its lifetime).
GrowStripe& GrowStripeFor(const void* chain);

}  // namespace bloomgate::internal
