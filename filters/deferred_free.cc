#include "filters/deferred_free.h"

#include <atomic>
#include <utility>

namespace bloomgate {
namespace {

// Acquire/release: the freer is fully built before a filter may call it.
std::atomic<DeferredFreer*> installed{nullptr};

}  // namespace

void SetDeferredFreer(DeferredFreer* freer) { installed.store(freer, std::memory_order_release); }

void ClearDeferredFreer(DeferredFreer* freer) {
  DeferredFreer* expected = freer;
  installed.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

void FreeDeferred(std::shared_ptr<void> doomed, uint64_t bytes) {
  DeferredFreer* freer = installed.load(std::memory_order_acquire);
  if (freer == nullptr || bytes < kDeferredFreeBytes) return;  // `doomed` dies here
  freer->Free(std::move(doomed));
}

}  // namespace bloomgate
