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

class WindowedCountingBloomFilter {
 public:
  using Gens = WindowGenerations<CountingBloomFilter>;
  using RestoredSlot = Gens::RestoredSlot;

  // Validates (as WindowedBloomFilter, plus counter_bits 4 or 8; else
  // kInvalidOptions) and creates generation 0 at `now_ms` rounded down to a
  // whole period (AlignedWindowOrigin), the origin.
  static FilterStatus Create(const WindowedCountingBloomOptions& options, int64_t now_ms,
                             const FilterLimits& limits, MemoryBudget* budget,
                             std::unique_ptr<WindowedCountingBloomFilter>* out,
                             MemoryRefusal* refusal = nullptr);

  // For loaders: as WindowedBloomFilter::Restore (options.hash_seed set,
  // n + 1 slots, the current one present, each generation hashing with the
  // seed and with the options' counter width and expansion).
  static FilterStatus Restore(const WindowedCountingBloomOptions& options, int64_t origin_ms,
                              uint64_t current_generation, std::vector<RestoredSlot> slots,
                              const FilterLimits& limits, MemoryBudget* budget,
                              std::unique_ptr<WindowedCountingBloomFilter>* out);

  WindowedCountingBloomFilter(const WindowedCountingBloomFilter&) = delete;
  WindowedCountingBloomFilter& operator=(const WindowedCountingBloomFilter&) = delete;
  ~WindowedCountingBloomFilter();

  KeyHash Hash(std::string_view item) const { return HashKey(item, hash_seed_); }

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

  bool MayContain(const KeyHash& h, int64_t now_ms) const;
  // Sum over the live generations of the item's count there (CBF.COUNT).
  uint64_t Count(const KeyHash& h, int64_t now_ms) const;
  // Occurrences (adds minus deletes) within the live generations (CBF.CARD).
  uint64_t ItemsAt(int64_t now_ms) const;

  // Replaces the generations dropped by `now_ms` (Add does it; for tests).
  FilterStatus AdvanceTo(int64_t now_ms);

  uint64_t GenerationAt(int64_t now_ms) const { return gens_.GenerationAt(now_ms); }
  int64_t GenerationAgeMs(int64_t now_ms) const { return gens_.GenerationAgeMs(now_ms); }
  uint64_t LookupAt(int64_t now_ms) const { return gens_.LookupAt(now_ms); }

  double error_rate() const { return error_rate_; }
  uint64_t capacity() const { return capacity_; }
  uint32_t expansion() const { return expansion_; }
  uint32_t counter_bits() const { return counter_bits_; }
  CountingLayout layout() const { return layout_; }
  uint64_t window_ms() const { return gens_.window_ms(); }
  uint32_t generations() const { return gens_.generations(); }
  uint64_t period_ms() const { return gens_.period_ms(); }
  int64_t origin_ms() const { return gens_.origin_ms(); }
  uint64_t hash_seed() const { return hash_seed_; }
  const FilterLimits& limits() const { return limits_; }
  uint64_t current_generation() const { return gens_.current(); }
  uint64_t memory_bytes() const;

  // The generation ring itself, for BF.MERGE / CBF.MERGE (server/commands/
  // bloom_merge.h), which combine generation by generation while holding
  // every key exclusively.
  WindowGenerations<CountingBloomFilter>& ring() { return gens_; }
  const WindowGenerations<CountingBloomFilter>& ring() const { return gens_; }

  // Runs `fn(slots)` (std::vector<WindowCountingSlotInfo>) with the ring
  // held still: the codec, CBF.INFO and CBF.MERGE read through it.
  template <typename Fn>
  auto WithSlots(Fn&& fn) const {
    return gens_.WithViews(std::forward<Fn>(fn));
  }

 private:
  WindowedCountingBloomFilter(const WindowedCountingBloomOptions& options, uint64_t seed,
                              int64_t origin_ms, const FilterLimits& limits, MemoryBudget* budget);

  static FilterStatus Check(const WindowedCountingBloomOptions& options);
  CountingBloomOptions GenerationOptions() const;
  FilterStatus NewGeneration(bool budgeted, std::unique_ptr<CountingBloomFilter>* out,
                             MemoryRefusal* refusal = nullptr) const;
  // Has the ring build each next generation ahead (window_generations.h).
  void EnablePreparation();
  FilterStatus AdvanceToGeneration(uint64_t target, bool budgeted);
  // The window count at generation `at`; call inside gens_.Shared.
  uint64_t CountIn(const std::vector<Gens::Slot>& slots, const KeyHash& h, uint64_t at) const;

  const double error_rate_;
  const uint64_t capacity_;
  const uint32_t expansion_;
  const uint32_t counter_bits_;
  const CountingLayout layout_;
  const uint64_t hash_seed_;
  const FilterLimits limits_;
  MemoryBudget* const budget_;
  Gens gens_;
};

}  // namespace bloomgate
