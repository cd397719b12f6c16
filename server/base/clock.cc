#include "server/base/clock.h"

#include <atomic>

namespace bloomgate {
namespace {

// Relaxed: the pointer publishes nothing but itself; tests set it before
// they run commands.
std::atomic<int64_t (*)()> test_clock{nullptr};

int64_t MsOf(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

int64_t WindowClockMs() { return WindowClockAt(std::chrono::steady_clock::now()); }

int64_t WindowClockAt(std::chrono::steady_clock::time_point steady_now) {
  if (int64_t (*clock)() = test_clock.load(std::memory_order_relaxed)) return clock();
  // Read once, together: the wall time at the anchor and the steady time then.
  static const int64_t anchor_wall = NowMs();
  static const int64_t anchor_steady = MsOf(std::chrono::steady_clock::now());
  return anchor_wall + (MsOf(steady_now) - anchor_steady);
}

void SetWindowClockForTesting(int64_t (*clock)()) {
  test_clock.store(clock, std::memory_order_relaxed);
}

}  // namespace bloomgate
