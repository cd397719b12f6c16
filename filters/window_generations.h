// The generation clock and slot ring that every windowed filter shares
// (WindowedBloomFilter over ScalableBloomFilter generations,
// WindowedCountingBloomFilter over CountingBloomFilter ones): which
// generation is current at a time, which are live, and the turnover that
// replaces dropped generations with fresh ones. What an add or a lookup does
// inside a generation is the owning filter's business.
//
// The window W is cut into n periods of P = ceil(W / n). Generation g covers
// [origin + g*P, origin + (g+1)*P); n + 1 slots hold the current generation
// and the n before it, slot g % (n+1) holding g. A lookup at generation `at`
// counts g live iff g <= at <= g + n, so an item added at t in generation g
// is present through t + W and gone from t + W + W/n on (the proof is in
// windowed_bloom_filter.h, whose tests check both edges to the millisecond).
//
// Time is a number the caller passes in (ms on a clock that only moves
// forwards while the process runs); generation numbers count from the
// origin, so a lookup ignores a generation older than `at - n` even before a
// turnover physically replaces it.
//
// Turnover: AdvanceTo(target) makes one fresh generation (the caller's
// `make`, outside every lock), then swaps it in under the slot lock held
// exclusively, taking the dropped generations out; the caller's `dispose`
// gets them after the unlock, so neither building nor freeing a generation
// happens while readers wait.
//
// Preparation (EnablePreparation): once a generation becomes current, the
// one that will replace the oldest is built ahead on the generation
// preparer's thread (filters/generation_preparer.h) with its pages made
// resident, and the next turnover takes it instead of calling `make`: the
// adds of a new period then fault nothing in. The prepared generation lives
// outside the slot array (prepared_), so lookups, adds, snapshots, INFO and
// copies never see it; it is charged to the budget from its allocation and
// counted in memory_bytes() (one more generation per windowed filter).
// A turnover that finds the spare not ready yet (a starved preparer) builds
// the generation itself on 4 KiB pages (SmallPagesScope), so no add waits
// for a 2 MiB fault's compaction; the next spare is prepared as usual.
//
// Concurrency: every public call may run from any thread. The slot array is
// guarded by a reader/writer mutex: shared for lookups and adds (the
// generations' own updates are lock-free or their own business), exclusive
// only for the pointer swap of a turnover; advance_mutex_ makes turnovers
// one at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "filters/block_words.h"
#include "filters/filter_status.h"
#include "filters/generation_preparer.h"

namespace bloomgate {

// GENERATIONS' range. 4 by default: the edge of the window is W/4 soft
// (absent by 1.25 W), memory is (n+1)/n = 1.25 x one window's worth of
// items, and a lookup probes 5 generations. n = 1 is the two-filter rotation
// (absent only by 2 W, memory 2 x); n = 16 sharpens the edge to W/16 for
// 1.06 x the items but 17 probes per lookup and a lower per-generation FP
// target (more bits per item).
constexpr uint32_t kDefaultWindowGenerations = 4;
constexpr uint32_t kMaxWindowGenerations = 64;
// A period must be at least 1 ms; a window at most 10 years in ms (fits
// every product below in an int64 with room to spare).
constexpr uint64_t kMaxWindowMs = uint64_t{10} * 366 * 24 * 3600 * 1000;

// Whether (window_ms, generations) make a window: n in [1, 64], W in [n, 10 years].
inline bool IsWindowShape(uint64_t window_ms, uint32_t generations) {
  return generations >= 1 && generations <= kMaxWindowGenerations && window_ms >= generations &&
         window_ms <= kMaxWindowMs;
}

// The window clock's range, both ways from 1970: 2^61 ms, 73 million years.
// Origins lie in it (AlignedWindowOrigin clamps a clock reading into it),
// and a reading past it counts as its end. So the distance from an origin
// to a reading is at most 2^62 ms, and a generation number at most 2^62:
// g + n never wraps, and a generation's start, origin + g * period, is an
// int64_t with room to spare (an origin 2^63 ms before a reading would
// overflow now - origin).
constexpr int64_t kMaxWindowClockMs = int64_t{1} << 61;

inline bool IsWindowOrigin(int64_t origin_ms) {
  return origin_ms >= -kMaxWindowClockMs && origin_ms <= kMaxWindowClockMs;
}

// The last generation a window with this origin and period can reach: the
// one current at the clock's end. period_ms >= 1, origin_ms in range.
inline uint64_t LastWindowGeneration(int64_t origin_ms, uint64_t period_ms) {
  return (static_cast<uint64_t>(kMaxWindowClockMs) - static_cast<uint64_t>(origin_ms)) / period_ms;
}

// A generation's error rate and first-layer capacity for a window of
// `generations` periods: the union bound over the n + 1 live generations
// (1 - (1 - p)^(n+1) <= (n+1) p), and the distinct items one period expects.
inline double WindowGenerationErrorRate(double error_rate, double max_error_rate,
                                        uint32_t generations) {
  return std::min(error_rate, max_error_rate) / (static_cast<double>(generations) + 1);
}
inline uint64_t WindowGenerationCapacity(uint64_t capacity, uint32_t generations) {
  return std::max<uint64_t>(1, capacity / generations + (capacity % generations != 0 ? 1 : 0));
}

// Where a new filter's generation 0 starts: `now_ms` rounded down to a
// whole period of the window clock, so that filters with the same window
// and generations share their generation boundaries (BF.MERGE / CBF.MERGE
// need them aligned) however far apart they were created. Generation 0 is
// then shorter than a period; the guarantee, which rests on the boundaries
// alone, is the same.
inline int64_t AlignedWindowOrigin(int64_t now_ms, uint64_t window_ms, uint32_t generations) {
  now_ms = std::clamp(now_ms, -kMaxWindowClockMs, kMaxWindowClockMs);
  const int64_t period = static_cast<int64_t>((window_ms + generations - 1) / generations);
  if (now_ms <= 0 || period <= 0) return now_ms;
  return now_ms - now_ms % period;
}

// One generation slot as a snapshot or INFO sees it.
template <typename Gen>
struct WindowSlotView {
  bool present = false;    // false: never used yet (young filter) or dropped
  uint64_t generation = 0;
  uint64_t new_items = 0;  // adds not seen in any live generation (BF.CARD's share)
  const Gen* filter = nullptr;
};

template <typename Gen>
class WindowGenerations {
 public:
  struct Slot {
    uint64_t generation = 0;
    // Relaxed: a statistic summed for CARD, publishing nothing.
    std::atomic<uint64_t> new_items{0};
    std::unique_ptr<Gen> filter;  // null: never used
  };

  // A slot as a loader hands it over (see Restore).
  struct RestoredSlot {
    uint64_t generation = 0;
    uint64_t new_items = 0;
    std::unique_ptr<Gen> filter;  // null: never used
  };

  // (window_ms, generations) must pass IsWindowShape.
  WindowGenerations(uint64_t window_ms, uint32_t generations, int64_t origin_ms)
      : window_ms_(window_ms),
        generations_(generations),
        // Rounded up so that n periods cover at least the window: an item is
        // never dropped before t + W (at most n - 1 ms late at the far edge).
        period_ms_((window_ms + generations - 1) / generations),
        origin_ms_(origin_ms),
        slots_(generations + 1) {}

  WindowGenerations(const WindowGenerations&) = delete;
  WindowGenerations& operator=(const WindowGenerations&) = delete;

  ~WindowGenerations() {
    std::unique_ptr<Gen> unused;  // freed after the unlock
    std::lock_guard lock(prepared_->mutex);
    prepared_->cancelled = true;  // a job still running drops what it built
    unused = std::move(prepared_->gen);
  }

  // Builds a fresh, budgeted generation. It runs on the preparer's thread,
  // perhaps after the filter is gone: it must hold copies of what it needs,
  // never the filter.
  using Maker = std::function<FilterStatus(std::unique_ptr<Gen>*)>;

  // Turns preparation on (after SetFirst or Restore, before the filter is
  // shared) and prepares the first spare at once.
  void EnablePreparation(Maker maker) {
    maker_ = std::move(maker);
    PrepareNext();
  }

  // The prepared spare, or nullptr (tests and memory figures).
  const Gen* prepared() const {
    std::lock_guard lock(prepared_->mutex);
    return prepared_->gen.get();
  }

  // Generation 0 of a new filter.
  void SetFirst(std::unique_ptr<Gen> first) { slots_[0].filter = std::move(first); }

  // Whether `slots` (exactly n + 1, slot i holding a g with g % (n+1) == i
  // and g <= current, the current one present) make a ring, with the origin
  // in the clock's range and current <= last_generation(); `accept(gen)`
  // checks each present generation's own parameters. Takes them when true.
  template <typename Accept>
  bool Restore(uint64_t current, std::vector<RestoredSlot>* slots, Accept&& accept) {
    if (!IsWindowOrigin(origin_ms_) || current > last_generation()) return false;
    if (slots->size() != slots_.size()) return false;
    bool has_current = false;
    for (size_t i = 0; i < slots->size(); ++i) {
      const RestoredSlot& s = (*slots)[i];
      if (s.filter == nullptr) continue;
      if (s.generation % slots->size() != i || s.generation > current || !accept(*s.filter)) {
        return false;
      }
      has_current |= s.generation == current;
    }
    if (!has_current) return false;
    for (size_t i = 0; i < slots->size(); ++i) {
      slots_[i].generation = (*slots)[i].generation;
      slots_[i].new_items.store((*slots)[i].new_items, std::memory_order_relaxed);
      slots_[i].filter = std::move((*slots)[i].filter);
    }
    current_.store(current, std::memory_order_release);
    return true;
  }

  uint64_t window_ms() const { return window_ms_; }
  uint32_t generations() const { return generations_; }
  uint64_t period_ms() const { return period_ms_; }
  int64_t origin_ms() const { return origin_ms_; }
  uint64_t current() const { return current_.load(std::memory_order_acquire); }
  size_t num_slots() const { return slots_.size(); }

  // The last generation this window can reach (LastWindowGeneration).
  uint64_t last_generation() const { return LastWindowGeneration(origin_ms_, period_ms_); }

  // The generation number current at `now_ms` (0 before the origin; a
  // reading past the clock's range counts as its end).
  uint64_t GenerationAt(int64_t now_ms) const { return SinceOrigin(now_ms) / period_ms_; }
  // How long the current generation at `now_ms` has run, in ms.
  int64_t GenerationAgeMs(int64_t now_ms) const {
    return static_cast<int64_t>(SinceOrigin(now_ms) % period_ms_);
  }
  // The generation a lookup at `now_ms` judges liveness by: never behind
  // the newest one an add (with a later clock read) already made current.
  uint64_t LookupAt(int64_t now_ms) const { return std::max(GenerationAt(now_ms), current()); }

  // Live at generation `at`: present, g <= at and g + n >= at.
  bool Live(const Slot& s, uint64_t at) const {
    return s.filter != nullptr && s.generation <= at && s.generation + generations_ >= at;
  }

  // Moves the current generation to `target` (nothing if it is there or
  // past): `make(std::unique_ptr<Gen>*)` builds the fresh one (returning a
  // FilterStatus; on failure nothing changed); every slot passed on the way
  // is emptied, and `dispose(std::unique_ptr<Gen>)` gets each generation
  // dropped, after the slot lock is released. Only the last n + 1 of the generations passed can be live at
  // `target`, so a long gap (an idle spell, a restart) replaces each slot
  // once, and generations that passed without an add stay empty.
  // A target past last_generation() (a replayed record cannot name one a
  // live filter reached) goes to last_generation().
  template <typename Make, typename Dispose>
  FilterStatus AdvanceTo(uint64_t target, Make&& make, Dispose&& dispose) {
    target = std::min(target, last_generation());
    if (current() >= target) return FilterStatus::kOk;
    std::lock_guard advance(advance_mutex_);
    const uint64_t current_now = current();
    if (current_now >= target) return FilterStatus::kOk;  // another thread did it
    const uint64_t slots = slots_.size();
    const uint64_t first = std::max(current_now + 1, target >= slots ? target - slots + 1 : 0);
    std::unique_ptr<Gen> fresh = TakePrepared();
    if (fresh == nullptr && maker_) {
      // The preparer is late: build the generation here, on small pages, so
      // the adds that first touch it fault 4 KiB at a time and never wait
      // for a compaction (internal::SmallPagesScope, block_words.h).
      internal::SmallPagesScope small_pages;
      if (FilterStatus s = make(&fresh); s != FilterStatus::kOk) return s;
    } else if (fresh == nullptr) {  // no preparer (tests, offline tools)
      if (FilterStatus s = make(&fresh); s != FilterStatus::kOk) return s;
    }
    std::vector<std::unique_ptr<Gen>> dropped;  // disposed of after the unlock
    dropped.reserve(target - first + 1);
    {
      std::unique_lock lock(slots_mutex_);
      for (uint64_t g = first; g <= target; ++g) {
        Slot& slot = slots_[g % slots];
        if (slot.filter != nullptr) dropped.push_back(std::move(slot.filter));
        slot.generation = g;
        slot.new_items.store(0, std::memory_order_relaxed);
      }
      slots_[target % slots].filter = std::move(fresh);
      current_.store(target, std::memory_order_release);
    }
    for (std::unique_ptr<Gen>& gen : dropped) dispose(std::move(gen));
    PrepareNext();
    return FilterStatus::kOk;
  }

  // Puts `gen` in as generation g where that slot holds no live g yet (a
  // merge fills generations its destination never had): g must be live at
  // the current generation. False, and `gen` dropped, otherwise.
  bool Install(uint64_t g, std::unique_ptr<Gen> gen) {
    std::lock_guard advance(advance_mutex_);
    std::unique_ptr<Gen> old;  // freed after the unlock
    {
      std::unique_lock lock(slots_mutex_);
      const uint64_t at = current();
      Slot& slot = slots_[g % slots_.size()];
      if (g > at || g + generations_ < at || (slot.filter != nullptr && slot.generation == g)) {
        return false;
      }
      old = std::move(slot.filter);
      slot.generation = g;
      slot.new_items.store(0, std::memory_order_relaxed);
      slot.filter = std::move(gen);
    }
    return true;
  }

  // Runs `fn(slots)` with the slot array held still (shared: lookups, adds
  // and copies run beside each other, a turnover waits).
  template <typename Fn>
  decltype(auto) Shared(Fn&& fn) const {
    std::shared_lock lock(slots_mutex_);
    return fn(static_cast<const std::vector<Slot>&>(slots_));
  }
  template <typename Fn>
  decltype(auto) Shared(Fn&& fn) {
    std::shared_lock lock(slots_mutex_);
    return fn(slots_);
  }

  // The slot of generation g if it holds g now, else nullptr (dropped, or
  // never used). Call inside Shared.
  static Slot* SlotOf(std::vector<Slot>& slots, uint64_t g) {
    Slot& s = slots[g % slots.size()];
    return s.filter != nullptr && s.generation == g ? &s : nullptr;
  }

  // The slots as views, for snapshots and INFO (see WithSlots of the filters).
  template <typename Fn>
  auto WithViews(Fn&& fn) const {
    std::shared_lock lock(slots_mutex_);
    std::vector<WindowSlotView<Gen>> views;
    views.reserve(slots_.size());
    for (const Slot& s : slots_) {
      views.push_back(WindowSlotView<Gen>{s.filter != nullptr, s.generation,
                                          s.new_items.load(std::memory_order_relaxed),
                                          s.filter.get()});
    }
    return fn(static_cast<const std::vector<WindowSlotView<Gen>>&>(views));
  }

  // Every present generation's memory_bytes() plus the ring's own.
  uint64_t memory_bytes() const {
    std::shared_lock lock(slots_mutex_);
    uint64_t sum = slots_.size() * sizeof(Slot);
    for (const Slot& s : slots_) {
      if (s.filter != nullptr) sum += s.filter->memory_bytes();
    }
    std::lock_guard prepared_lock(prepared_->mutex);
    if (prepared_->gen != nullptr) sum += prepared_->gen->memory_bytes();
    return sum;
  }

 private:
  // What a filter and its preparation job share: the job holds it, never
  // the filter, so it outlives either.
  struct Prepared {
    std::mutex mutex;
    bool scheduled = false;  // a job is queued or running
    bool cancelled = false;  // the filter is gone: a finishing job drops its work
    std::unique_ptr<Gen> gen;
  };

  // Milliseconds from the origin to `now_ms`, 0 before it; the reading is
  // clamped to the clock's range and a restored origin was checked against
  // it; the difference is taken in uint64_t all the same, where no origin a
  // constructor got can make it overflow.
  uint64_t SinceOrigin(int64_t now_ms) const {
    now_ms = std::min(now_ms, kMaxWindowClockMs);
    if (now_ms <= origin_ms_) return 0;
    return static_cast<uint64_t>(now_ms) - static_cast<uint64_t>(origin_ms_);
  }

  std::unique_ptr<Gen> TakePrepared() {
    std::lock_guard lock(prepared_->mutex);
    return std::move(prepared_->gen);
  }

  // Queues the building of a spare if preparation is on and none is ready
  // or under way. A failed build (the budget refused) leaves none: the next
  // turnover builds inline, as without a preparer, and tries again.
  void PrepareNext() {
    if (!maker_) return;
    {
      std::lock_guard lock(prepared_->mutex);
      if (prepared_->cancelled || prepared_->scheduled || prepared_->gen != nullptr) return;
      prepared_->scheduled = true;
    }
    const bool queued = PrepareAhead([state = prepared_, maker = maker_] {
      std::unique_ptr<Gen> built;
      {
        internal::PopulateFreshArraysScope populate;  // fault it all in here
        if (maker(&built) != FilterStatus::kOk) built.reset();
      }
      std::unique_ptr<Gen> unused;  // freed after the unlock
      std::lock_guard lock(state->mutex);
      state->scheduled = false;
      if (state->cancelled) {
        unused = std::move(built);
      } else {
        state->gen = std::move(built);
      }
    });
    if (!queued) {
      std::lock_guard lock(prepared_->mutex);
      prepared_->scheduled = false;
    }
  }

  const uint64_t window_ms_;
  const uint32_t generations_;
  const uint64_t period_ms_;  // ceil(window_ms / generations), >= 1
  const int64_t origin_ms_;

  mutable std::shared_mutex slots_mutex_;  // shared: every call; exclusive: the swap
  std::mutex advance_mutex_;               // one turnover at a time
  std::atomic<uint64_t> current_{0};       // written under both mutexes
  std::vector<Slot> slots_;                // generations + 1; slot g % (n+1)
  Maker maker_;                            // empty: no preparation; set before sharing
  const std::shared_ptr<Prepared> prepared_ = std::make_shared<Prepared>();
};

}  // namespace bloomgate
