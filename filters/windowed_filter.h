// What every windowed filter has over its generation type Gen: the
// parameters of the window (error rate for the union of the live
// generations, capacity per window, each generation's expansion, the hash
// seed, the limits and budget new generations are made under), the
// generation ring (window_generations.h), Create and Restore, the turnover
// that makes and frees generations, the lookup, and the accessors.
// WindowedBloomFilter (over ScalableBloomFilter generations) and
// WindowedCountingBloomFilter (over CountingBloomFilter ones) add what an
// add, a count or a delete means inside a generation.
//
// Derived (CRTP) befriends this template and gives:
//   Derived(const Options&, uint64_t seed, int64_t origin_ms,
//           const FilterLimits&, MemoryBudget*)          private constructor
//   static FilterStatus Check(const Options&)             its own validation
//   GenOptions GenerationOptions() const                  a fresh generation's
//   bool AcceptsGeneration(const Gen&) const              a loaded one fits
// Options has error_rate, capacity, expansion, window_ms, generations and
// hash_seed (std::optional<uint64_t>).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "filters/deferred_free.h"
#include "filters/filter_status.h"
#include "filters/hash_seed.h"
#include "filters/key_hash.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/window_generations.h"

namespace bloomgate {

template <typename Derived, typename Gen, typename Options>
class WindowedFilter {
 public:
  using Gens = WindowGenerations<Gen>;
  using RestoredSlot = typename Gens::RestoredSlot;

  // Validates (error_rate in (0, 1), capacity >= 1, expansion in
  // [1, kMaxBloomExpansion], generations in [1, kMaxWindowGenerations],
  // window_ms in [generations, kMaxWindowMs], and Derived::Check; else
  // kInvalidOptions) and creates generation 0 at `now_ms` rounded down to a
  // whole period (AlignedWindowOrigin, window_generations.h), the filter's
  // origin. A first generation refused for memory is described in *refusal
  // when given.
  static FilterStatus Create(const Options& options, int64_t now_ms, const FilterLimits& limits,
                             MemoryBudget* budget, std::unique_ptr<Derived>* out,
                             MemoryRefusal* refusal = nullptr) {
    out->reset();
    if (FilterStatus s = CheckAll(options); s != FilterStatus::kOk) return s;
    const uint64_t seed = options.hash_seed ? *options.hash_seed : NewHashSeed();
    const int64_t origin = AlignedWindowOrigin(now_ms, options.window_ms, options.generations);
    std::unique_ptr<Derived> filter(new (std::nothrow)
                                        Derived(options, seed, origin, limits, budget));
    if (filter == nullptr) return FilterStatus::kOutOfMemory;
    std::unique_ptr<Gen> first;
    if (FilterStatus s = filter->NewGeneration(/*budgeted=*/true, &first, refusal);
        s != FilterStatus::kOk) {
      return s;
    }
    filter->gens_.SetFirst(std::move(first));
    filter->EnablePreparation();
    *out = std::move(filter);
    return FilterStatus::kOk;
  }

  // For loaders: a filter with these parameters (options.hash_seed set),
  // its origin and current generation, and `slots` (exactly generations + 1
  // of them, slot i holding a generation g with g % (n+1) == i,
  // g <= current, present ones with their filter, each hashing with the
  // seed and made with the options' expansion and whatever else
  // Derived::AcceptsGeneration asks). kInvalidOptions if anything is out of
  // range.
  static FilterStatus Restore(const Options& options, int64_t origin_ms,
                              uint64_t current_generation, std::vector<RestoredSlot> slots,
                              const FilterLimits& limits, MemoryBudget* budget,
                              std::unique_ptr<Derived>* out) {
    out->reset();
    if (FilterStatus s = CheckAll(options); s != FilterStatus::kOk) return s;
    if (!options.hash_seed) return FilterStatus::kInvalidOptions;
    std::unique_ptr<Derived> filter(new (std::nothrow) Derived(
        options, *options.hash_seed, origin_ms, limits, budget));
    if (filter == nullptr) return FilterStatus::kOutOfMemory;
    const Derived& made = *filter;
    const bool ok = filter->gens_.Restore(current_generation, &slots, [&](const Gen& g) {
      return g.hash_seed() == made.hash_seed_ && g.expansion() == made.expansion_ &&
             made.AcceptsGeneration(g);
    });
    if (!ok) return FilterStatus::kInvalidOptions;
    filter->EnablePreparation();
    *out = std::move(filter);
    return FilterStatus::kOk;
  }

  WindowedFilter(const WindowedFilter&) = delete;
  WindowedFilter& operator=(const WindowedFilter&) = delete;

  KeyHash Hash(std::string_view item) const { return HashKey(item, hash_seed_); }

  // Whether any generation live at `now_ms` may hold the item.
  bool MayContain(const KeyHash& h, int64_t now_ms) const {
    const uint64_t at = gens_.LookupAt(now_ms);
    return gens_.Shared([&](const std::vector<typename Gens::Slot>& slots) {
      for (const typename Gens::Slot& s : slots) {
        if (gens_.Live(s, at) && s.filter->MayContain(h)) return true;
      }
      return false;
    });
  }

  // Replaces the generations dropped by `now_ms` with fresh ones (an add
  // does it; exposed for tests and for a load that wants memory back early).
  FilterStatus AdvanceTo(int64_t now_ms) {
    return AdvanceToGeneration(GenerationAt(now_ms), /*budgeted=*/true);
  }

  // The generation number current at `now_ms` (0 before the origin).
  uint64_t GenerationAt(int64_t now_ms) const { return gens_.GenerationAt(now_ms); }
  // How long the current generation at `now_ms` has run, in ms.
  int64_t GenerationAgeMs(int64_t now_ms) const { return gens_.GenerationAgeMs(now_ms); }
  // The generation a lookup at `now_ms` judges liveness by.
  uint64_t LookupAt(int64_t now_ms) const { return gens_.LookupAt(now_ms); }

  double error_rate() const { return error_rate_; }
  uint64_t capacity() const { return capacity_; }
  uint32_t expansion() const { return expansion_; }
  uint64_t window_ms() const { return gens_.window_ms(); }
  uint32_t generations() const { return gens_.generations(); }
  uint64_t period_ms() const { return gens_.period_ms(); }
  int64_t origin_ms() const { return gens_.origin_ms(); }
  uint64_t hash_seed() const { return hash_seed_; }
  const FilterLimits& limits() const { return limits_; }
  uint64_t current_generation() const { return gens_.current(); }
  // Every slot's generation filter (and the prepared one) plus this object.
  uint64_t memory_bytes() const { return sizeof(Derived) + gens_.memory_bytes(); }

  // The generation ring itself, for BF.MERGE / CBF.MERGE (server/commands/
  // bloom_merge.h), which combine generation by generation while holding
  // every key exclusively.
  Gens& ring() { return gens_; }
  const Gens& ring() const { return gens_; }

  // Runs `fn(slots)` (std::vector<WindowSlotView<Gen>>) with the slot array
  // held still (no turnover meanwhile): the snapshot codec describes and
  // copies through it, BF.INFO / CBF.INFO read it.
  template <typename Fn>
  auto WithSlots(Fn&& fn) const {
    return gens_.WithViews(std::forward<Fn>(fn));
  }

 protected:
  WindowedFilter(const Options& o, uint64_t seed, int64_t origin_ms, const FilterLimits& limits,
                 MemoryBudget* budget)
      : error_rate_(std::min(o.error_rate, kMaxBloomErrorRate)),
        capacity_(o.capacity),
        expansion_(o.expansion),
        hash_seed_(seed),
        limits_(limits),
        budget_(budget),
        gens_(o.window_ms, o.generations, origin_ms) {}
  ~WindowedFilter() = default;

  // A fresh generation; `budgeted` false (replay) makes it outside the
  // budget and max-filter-memory, so a replay is never refused.
  FilterStatus NewGeneration(bool budgeted, std::unique_ptr<Gen>* out,
                             MemoryRefusal* refusal = nullptr) const {
    FilterLimits limits = limits_;
    if (!budgeted) limits.max_filter_bytes = 0;
    return Gen::Create(self().GenerationOptions(), limits, budgeted ? budget_ : nullptr, out,
                       refusal);
  }

  // Moves the current generation to `target`, freeing the dropped ones off
  // this thread when big: freeing is munmap of their touched pages
  // (filters/deferred_free.h), ~1.6 ms for 20 MB.
  FilterStatus AdvanceToGeneration(uint64_t target, bool budgeted) {
    return gens_.AdvanceTo(
        target, [&](std::unique_ptr<Gen>* fresh) { return NewGeneration(budgeted, fresh); },
        [](std::unique_ptr<Gen> doomed) {
          const uint64_t bytes = doomed->memory_bytes();
          FreeDeferred(std::shared_ptr<void>(std::move(doomed)), bytes);
        });
  }

  const double error_rate_;
  const uint64_t capacity_;
  const uint32_t expansion_;
  const uint64_t hash_seed_;
  const FilterLimits limits_;
  MemoryBudget* const budget_;
  Gens gens_;  // the clock, the slot ring and the turnover

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }

  static FilterStatus CheckAll(const Options& o) {
    if (!(o.error_rate > 0 && o.error_rate < 1) || o.capacity == 0 || o.expansion == 0 ||
        o.expansion > kMaxBloomExpansion || !IsWindowShape(o.window_ms, o.generations)) {
      return FilterStatus::kInvalidOptions;
    }
    return Derived::Check(o);
  }

  // Has the ring build each next generation ahead (window_generations.h).
  // Copies, not `this`: the job may outlive the filter.
  void EnablePreparation() {
    gens_.EnablePreparation([options = self().GenerationOptions(), limits = limits_,
                             budget = budget_](std::unique_ptr<Gen>* out) {
      return Gen::Create(options, limits, budget, out);
    });
  }
};

}  // namespace bloomgate
