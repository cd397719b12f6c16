#include "filters/memory_budget.h"

#include <cassert>

#include "filters/admission.h"

namespace bloomgate {

MemoryBudget::MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}

bool MemoryBudget::TryReserve(uint64_t bytes, uint64_t* used_seen) {
  // Relaxed: a limit change racing with this reservation may apply to it or
  // not; either answer is one a sequential order would also have given.
  // A replay applies what was acknowledged: past the limit (admission.h).
  const uint64_t limit = LimitsJudge() ? limit_.load(std::memory_order_relaxed) : 0;
  // Relaxed: only this counter's own value matters (see the class comment).
  uint64_t used = used_.load(std::memory_order_relaxed);
  for (;;) {
    if (bytes > UINT64_MAX - used || (limit != 0 && used + bytes > limit)) {  // or it would wrap
      if (used_seen != nullptr) *used_seen = used;
      return false;
    }
    // Relaxed on success and failure: the CAS orders this reservation among
    // all others on the same counter, which is all the cap needs; on failure
    // `used` is refreshed with the current value and we re-check the limit.
    if (used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed,
                                    std::memory_order_relaxed)) {
      return true;
    }
  }
}

void MemoryBudget::Release(uint64_t bytes) {
  // Relaxed: a plain counter decrement; the memory itself was freed (or is
  // about to be) by the caller, and no reader infers anything from the value.
  [[maybe_unused]] const uint64_t before = used_.fetch_sub(bytes, std::memory_order_relaxed);
  assert(before >= bytes && "MemoryBudget::Release of bytes never reserved");
}

// Relaxed: a statistic for INFO / tests; exact once the writers are quiet.
uint64_t MemoryBudget::used() const { return used_.load(std::memory_order_relaxed); }

// Relaxed: the limit publishes nothing but itself.
uint64_t MemoryBudget::limit() const { return limit_.load(std::memory_order_relaxed); }

// Relaxed: see limit().
void MemoryBudget::set_limit(uint64_t limit_bytes) {
  limit_.store(limit_bytes, std::memory_order_relaxed);
}

}  // namespace bloomgate
