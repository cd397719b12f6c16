// A time-windowed Bloom filter: "was this item seen in the last W seconds?"
// (BF.RESERVE ... WINDOW seconds [GENERATIONS n]).
//
// The window is cut into n periods of P = W / n. Each period has its own
// generation, a ScalableBloomFilter; adds go to the current generation and
// lookups check the current one and the n before it, so n + 1 generations are
// live. Generation g covers [origin + g*P, origin + (g+1)*P) and is dropped
// when generation g + n + 1 begins, at origin + (g+n+1)*P. An item added at t
// inside generation g (origin + g*P <= t < origin + (g+1)*P) is therefore
//  - present through t + W:  origin + (g+n+1)*P = origin + (g+1)*P + W > t + W;
//  - absent from t + W + P = t + W + W/n on, since origin + (g+n+1)*P
//    <= t + (n+1)*P.
// (windowed_bloom_filter_test's WindowGuarantee checks both edges.)
//
// Sizing: capacity is the distinct items expected per window, so each period
// expects capacity / n of them (rounded up) and each generation starts with
// that capacity; a period with more items grows its generation like any
// scalable filter, and the growth ages out with the generation. A lookup
// that passes n + 1 independent filters with FP rates p_g each has an FP
// rate of 1 - (1 - p_g)^(n+1) <= (n+1) * p_g, so each generation gets
// p_g = error_rate / (n + 1): for 1% and n = 4, 0.2% per generation, and the
// union stays at or under 1% (measured 0.4% on 100k probes at capacity).
//
// Time is a number the caller passes in (milliseconds on a clock that only
// moves forwards while the process runs; the server's is WindowClockMs() in
// server/base/clock.h), so tests inject it. Generation numbers count from
// the filter's origin; a lookup at time `now` ignores every generation older
// than GenerationAt(now) - n even before it is physically replaced, so a
// restart after a long stop, or a read after an idle spell, never sees
// stale items. Turnover (replacing dropped generations with fresh ones)
// happens on the first add of a new period: the fresh generation is built
// outside the lookup lock, so readers wait only for a pointer swap.
//
// Replay: Add reports the generation its item went to; ReplayAdd puts it
// there again (advancing to it first), unconditionally, so a log replay
// rebuilds the same generations whatever the clock says at replay time.
//
// Concurrency: Add, ReplayAdd and MayContain run concurrently from any
// threads. Bit updates are the generations' own (lock-free); the slot ring
// (filters/window_generations.h, shared with the windowed counting filter)
// is guarded by a reader/writer mutex taken shared by every call and
// exclusively only for the swap at a turnover.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/filter_status.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/scalable_bloom_filter.h"
#include "filters/window_generations.h"
#include "filters/windowed_filter.h"

namespace bloomgate {

struct WindowedBloomOptions {
  double error_rate = 0.01;   // for the union of the live generations
  uint64_t capacity = 100;    // distinct items expected per window
  uint32_t expansion = 2;     // each generation's growth; >= 1
  uint64_t window_ms = 0;     // W, in [generations, kMaxWindowMs]
  uint32_t generations = kDefaultWindowGenerations;  // n, [1, kMaxWindowGenerations]
  std::optional<uint64_t> hash_seed;  // unset: a fresh one (NewHashSeed)
};

// One generation slot as a snapshot sees it.
using WindowSlotInfo = WindowSlotView<ScalableBloomFilter>;

// Create, Restore, MayContain, the accessors, ring() and WithSlots are
// WindowedFilter's (windowed_filter.h); what an add means is this class's.
class WindowedBloomFilter
    : public WindowedFilter<WindowedBloomFilter, ScalableBloomFilter, WindowedBloomOptions> {
 public:
  // The per-generation error rate and first-layer capacity for `options`
  // (see "Sizing").
  static double GenerationErrorRate(double error_rate, uint32_t generations);
  static uint64_t GenerationCapacity(uint64_t capacity, uint32_t generations);

  ~WindowedBloomFilter();

  // Records the item in the generation current at `now_ms` (turning over
  // first if a period ended). *seen: it was already present in a live
  // generation (BF.ADD replies !seen). *generation: where it went, for the
  // journal; *added_to_generation: it flipped a bit there. On a failed
  // status (a new layer or a fresh generation refused by the limits) nothing
  // changed.
  // A layer refused for memory is described in *refusal when given.
  FilterStatus Add(const KeyHash& h, int64_t now_ms, bool* seen, uint64_t* generation,
                   bool* added_to_generation, MemoryRefusal* refusal = nullptr);

  // Re-applies an acknowledged add into `generation` (advancing to it
  // first), never refused: fresh generations that the budget refuses are
  // made outside it. `seen` and `added_to_generation` are what Add said.
  // An add to a generation already dropped changes nothing (it had aged
  // out when it ran, too).
  void ReplayAdd(const KeyHash& h, uint64_t generation, bool seen, bool added_to_generation);

  // Adds new to the window among the generations live at `now_ms` (BF.CARD).
  uint64_t ItemsAt(int64_t now_ms) const;

 private:
  friend class WindowedFilter<WindowedBloomFilter, ScalableBloomFilter, WindowedBloomOptions>;

  WindowedBloomFilter(const WindowedBloomOptions& options, uint64_t seed, int64_t origin_ms,
                      const FilterLimits& limits, MemoryBudget* budget)
      : WindowedFilter(options, seed, origin_ms, limits, budget) {}

  // Nothing beyond the window's own checks.
  static FilterStatus Check(const WindowedBloomOptions&) { return FilterStatus::kOk; }
  ScalableBloomOptions GenerationOptions() const;
  // Seed and expansion are checked for every windowed filter.
  bool AcceptsGeneration(const ScalableBloomFilter&) const { return true; }
};

}  // namespace bloomgate
