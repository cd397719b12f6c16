// The wall clock every deadline is measured against: Unix time in
// milliseconds, as Redis's PEXPIREAT and the snapshot and log records use.
#pragma once

#include <chrono>
#include <cstdint>

namespace bloomgate {

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The window clock that windowed filters age by (filters/windowed_bloom_filter.h):
// milliseconds that advance with std::chrono::steady_clock, anchored to the
// wall clock (NowMs) the first time it is read in the process. So while the
// server runs, a wall-clock jump (NTP, an operator) neither ages a window
// early nor stretches it; across a restart the anchor is the wall clock
// again, which is all that survives a stop.
int64_t WindowClockMs();

// The window clock at `steady_now`, a steady_clock reading the caller already
// holds: the dispatcher times each command with one and derives the
// command's window clock from it rather than reading the clock again (a
// clock read is ~22 ns, 3% of a pipelined BF.EXISTS).
int64_t WindowClockAt(std::chrono::steady_clock::time_point steady_now);

// Tests: replaces the window clock with `clock` (nullptr restores the real
// one). Not for use while commands run on other threads.
void SetWindowClockForTesting(int64_t (*clock)());

}  // namespace bloomgate
