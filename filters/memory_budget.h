#pragma once

#include <atomic>
#include <cstdint>

namespace bloomgate {

// The total byte cap shared by every filter of a server (config: maxmemory
// for filters). Filters reserve here BEFORE allocating and release in their
// destructor, so used() is exactly the sum of their memory_bytes().
//
// Thread-safe and lock-free: a reservation is a CAS loop on one counter.
// Every atomic here uses memory_order_relaxed on purpose: the counter guards
// no other data (nobody reads filter memory because of what they saw here),
// and read-modify-writes on a single atomic are never lost or reordered with
// each other whatever the order argument (they share one modification order),
// so the sum stays exact and the limit is never overshot.
class MemoryBudget {
 public:
  // limit_bytes == 0 means unlimited.
  explicit MemoryBudget(uint64_t limit_bytes);

  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Reserves `bytes` if used() + bytes <= limit(); otherwise reserves nothing
  // and returns false. Also false if the sum would overflow 64 bits, even
  // when unlimited (such a request can never be allocated anyway). A thread
  // replaying recorded writes (AsRecordedScope) reserves past the limit.
  bool TryReserve(uint64_t bytes) { return TryReserve(bytes, nullptr); }
  // The same; when it refuses, *used_seen (if given) is what the budget held
  // at the moment it compared (the figure a refusal reports).
  bool TryReserve(uint64_t bytes, uint64_t* used_seen);

  // Gives back bytes from an earlier successful TryReserve.
  void Release(uint64_t bytes);

  uint64_t used() const;
  uint64_t limit() const;

  // Takes effect for later reservations; lowering it below used() frees
  // nothing, it only makes new reservations fail until enough is released.
  void set_limit(uint64_t limit_bytes);

 private:
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> limit_;
};

}  // namespace bloomgate
