// A time-windowed counting Bloom filter: "how often was this item seen in
// the last W seconds?" (CBF.RESERVE ... WINDOW seconds [GENERATIONS n]),
// the n-th-hit admission of a CDN edge in one CBF.INCR per miss.
//
// The window and its generations are those of the windowed Bloom filter
// (filters/window_generations.h: the same clock, ring and turnover, and the
// same guarantee: an occurrence added at t counts through t + W and no
// longer from t + W + W/n on); each generation is a CountingBloomFilter.
// Adds (CBF.ADD, CBF.INCR) go to the current generation; an item's window
// count (CBF.COUNT, CBF.INCR's reply) is the sum over the live generations
// of its count there, each the minimum of its counters in its layers, so it
// is an upper bound on the occurrences within the window (never below them
// while only added items are deleted, as for any counting filter).
//
// Sizing, as the windowed Bloom filter: each generation starts with
// ceil(capacity / n) and error_rate / (n + 1), so the union of the n + 1
// live generations stays at or under error_rate.
//
// Deletes (CBF.DEL) take one occurrence from the NEWEST live generation
// that reports the item: an occurrence is undone where it will last
// longest, so the delete is not silently forgotten when an older
// generation ages out a period later. The counting filter's rule holds
// per generation: delete only what was added. An item reported by no live
// generation is refused (0) and changes nothing.
//
// Replay: Add and Remove report the generation they worked on; ReplayAdd and
// ReplayRemove redo it there (advancing to it first), so a log replay
// rebuilds the same generations whatever the clock says at replay time.
//
// Concurrency: as the windowed Bloom filter (the ring's reader/writer lock,
// the generations' lock-free counters). The server holds a counting
// filter's key exclusively for writes, so an Add's count is its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/counting_bloom_filter.h"
#include "filters/filter_status.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/window_generations.h"
#include "filters/windowed_filter.h"

namespace bloomgate {

struct WindowedCountingBloomOptions {
  double error_rate = 0.01;  // for the union of the live generations
  uint64_t capacity = 100;   // distinct items expected per window
  uint32_t expansion = 2;    // each generation's growth; >= 1
  uint32_t counter_bits = kCountingBloomNarrowCounterBits;  // 4 or 8
  uint64_t window_ms = 0;    // W, in [generations, kMaxWindowMs]
  uint32_t generations = kDefaultWindowGenerations;  // n, [1, kMaxWindowGenerations]
  std::optional<uint64_t> hash_seed;  // unset: a fresh one (NewHashSeed)
  // Every generation's layout; unset: PreferredCountingLayout for a
  // generation's error rate and the expansion (kept for the filter's life, so
  // all generations are alike and a snapshot saves it once).
  std::optional<CountingLayout> layout;
};

using WindowCountingSlotInfo = WindowSlotView<CountingBloomFilter>;

// Create, Restore, MayContain, the accessors, ring() and WithSlots are
// WindowedFilter's (windowed_filter.h), as for WindowedBloomFilter; what an
// add, a count and a delete mean is this class's.
class WindowedCountingBloomFilter
    : public WindowedFilter<WindowedCountingBloomFilter, CountingBloomFilter,
                            WindowedCountingBloomOptions> {
 public:
  ~WindowedCountingBloomFilter();

  // Adds one occurrence to the generation current at `now_ms` (turning over
  // first if a period ended). *was_new: no live generation reported the item
  // before (CBF.ADD's reply); *count: its window count after this add
  // (CBF.INCR's reply); *generation: where it went, for the journal. On a
  // failed status (a fresh generation or a new layer refused by the limits)
  // nothing changed.
  // A layer refused for memory is described in *refusal when given.
  FilterStatus Add(const KeyHash& h, int64_t now_ms, bool* was_new, uint64_t* count,
                   uint64_t* generation, MemoryRefusal* refusal = nullptr);

  // Re-applies an acknowledged add into `generation` (advancing to it
  // first; a fresh generation the budget refuses is made outside it). An
  // add to a generation already dropped changes nothing. The generation's
  // own add may still be refused when limits were lowered since it ran.
  FilterStatus ReplayAdd(const KeyHash& h, uint64_t generation);

  // Removes one occurrence from the newest generation live at `now_ms`
  // that reports the item: true and *generation set; false, changing
  // nothing, when none does.
  bool Remove(const KeyHash& h, int64_t now_ms, uint64_t* generation);
  // Re-applies a Remove into `generation` if it is still there.
  void ReplayRemove(const KeyHash& h, uint64_t generation);

  // Sum over the live generations of the item's count there (CBF.COUNT).
  uint64_t Count(const KeyHash& h, int64_t now_ms) const;
  // Occurrences (adds minus deletes) within the live generations (CBF.CARD).
  uint64_t ItemsAt(int64_t now_ms) const;

  uint32_t counter_bits() const { return counter_bits_; }
  CountingLayout layout() const { return layout_; }

 private:
  friend class WindowedFilter<WindowedCountingBloomFilter, CountingBloomFilter,
                              WindowedCountingBloomOptions>;

  WindowedCountingBloomFilter(const WindowedCountingBloomOptions& options, uint64_t seed,
                              int64_t origin_ms, const FilterLimits& limits, MemoryBudget* budget);

  // counter_bits 4 or 8.
  static FilterStatus Check(const WindowedCountingBloomOptions& options);
  CountingBloomOptions GenerationOptions() const;
  // A loaded generation has this filter's counter width and layout.
  bool AcceptsGeneration(const CountingBloomFilter& g) const;
  // The window count at generation `at`; call inside gens_.Shared.
  uint64_t CountIn(const std::vector<Gens::Slot>& slots, const KeyHash& h, uint64_t at) const;

  const uint32_t counter_bits_;
  const CountingLayout layout_;
};

}  // namespace bloomgate
