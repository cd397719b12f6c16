#include "filters/windowed_counting_bloom_filter.h"

#include <algorithm>
#include <new>
#include <utility>

#include "filters/deferred_free.h"
#include "filters/hash_seed.h"
#include "filters/memory_reservation.h"

namespace bloomgate {

FilterStatus WindowedCountingBloomFilter::Check(const WindowedCountingBloomOptions& o) {
  if (!(o.error_rate > 0 && o.error_rate < 1) || o.capacity == 0 || o.expansion == 0 ||
      o.expansion > kMaxBloomExpansion || !IsWindowShape(o.window_ms, o.generations) ||
      (o.counter_bits != kCountingBloomNarrowCounterBits &&
       o.counter_bits != kCountingBloomWideCounterBits)) {
    return FilterStatus::kInvalidOptions;
  }
  return FilterStatus::kOk;
}

WindowedCountingBloomFilter::WindowedCountingBloomFilter(const WindowedCountingBloomOptions& o,
                                                         uint64_t seed, int64_t origin_ms,
                                                         const FilterLimits& limits,
                                                         MemoryBudget* budget)
    : error_rate_(std::min(o.error_rate, kMaxBloomErrorRate)),
      capacity_(o.capacity),
      expansion_(o.expansion),
      counter_bits_(o.counter_bits),
      layout_(o.layout.value_or(PreferredCountingLayout(
          WindowGenerationErrorRate(error_rate_, kMaxBloomErrorRate, o.generations),
          o.expansion))),
      hash_seed_(seed),
      limits_(limits),
      budget_(budget),
      gens_(o.window_ms, o.generations, origin_ms) {}

WindowedCountingBloomFilter::~WindowedCountingBloomFilter() = default;

CountingBloomOptions WindowedCountingBloomFilter::GenerationOptions() const {
  CountingBloomOptions options;
  options.error_rate = WindowGenerationErrorRate(error_rate_, kMaxBloomErrorRate, generations());
  options.capacity = WindowGenerationCapacity(capacity_, generations());
  options.expansion = expansion_;
  options.counter_bits = counter_bits_;
  options.hash_seed = hash_seed_;
  options.layout = layout_;
  return options;
}

FilterStatus WindowedCountingBloomFilter::NewGeneration(
    bool budgeted, std::unique_ptr<CountingBloomFilter>* out,
    MemoryRefusal* refusal) const {
  FilterLimits limits = limits_;
  if (!budgeted) limits.max_filter_bytes = 0;  // replay never refuses
  return CountingBloomFilter::Create(GenerationOptions(), limits, budgeted ? budget_ : nullptr,
                                     out, refusal);
}

void WindowedCountingBloomFilter::EnablePreparation() {
  // Copies, not `this`: the job may outlive the filter (window_generations.h).
  gens_.EnablePreparation([options = GenerationOptions(), limits = limits_, budget = budget_](
                              std::unique_ptr<CountingBloomFilter>* out) {
    return CountingBloomFilter::Create(options, limits, budget, out);
  });
}

FilterStatus WindowedCountingBloomFilter::Create(
    const WindowedCountingBloomOptions& options, int64_t now_ms, const FilterLimits& limits,
    MemoryBudget* budget, std::unique_ptr<WindowedCountingBloomFilter>* out,
    MemoryRefusal* refusal) {
  out->reset();
  if (FilterStatus s = Check(options); s != FilterStatus::kOk) return s;
  const uint64_t seed = options.hash_seed ? *options.hash_seed : NewHashSeed();
  std::unique_ptr<WindowedCountingBloomFilter> filter(
      new (std::nothrow) WindowedCountingBloomFilter(
      options, seed, AlignedWindowOrigin(now_ms, options.window_ms, options.generations), limits,
      budget));
  if (filter == nullptr) return FilterStatus::kOutOfMemory;
  std::unique_ptr<CountingBloomFilter> first;
  if (FilterStatus s = filter->NewGeneration(/*budgeted=*/true, &first, refusal); s != FilterStatus::kOk) {
    return s;
  }
  filter->gens_.SetFirst(std::move(first));
  filter->EnablePreparation();
  *out = std::move(filter);
  return FilterStatus::kOk;
}

FilterStatus WindowedCountingBloomFilter::Restore(
    const WindowedCountingBloomOptions& options, int64_t origin_ms, uint64_t current_generation,
    std::vector<RestoredSlot> slots, const FilterLimits& limits, MemoryBudget* budget,
    std::unique_ptr<WindowedCountingBloomFilter>* out) {
  out->reset();
  if (FilterStatus s = Check(options); s != FilterStatus::kOk) return s;
  if (!options.hash_seed) return FilterStatus::kInvalidOptions;
  std::unique_ptr<WindowedCountingBloomFilter> filter(new (std::nothrow)
      WindowedCountingBloomFilter(options, *options.hash_seed, origin_ms, limits, budget));
  if (filter == nullptr) return FilterStatus::kOutOfMemory;
  const bool ok =
      filter->gens_.Restore(current_generation, &slots, [&](const CountingBloomFilter& g) {
        return g.hash_seed() == *options.hash_seed && g.expansion() == options.expansion &&
               g.counter_bits() == options.counter_bits && g.layout() == filter->layout();
      });
  if (!ok) return FilterStatus::kInvalidOptions;
  filter->EnablePreparation();
  *out = std::move(filter);
  return FilterStatus::kOk;
}

FilterStatus WindowedCountingBloomFilter::AdvanceTo(int64_t now_ms) {
  return AdvanceToGeneration(GenerationAt(now_ms), /*budgeted=*/true);
}

FilterStatus WindowedCountingBloomFilter::AdvanceToGeneration(uint64_t target, bool budgeted) {
  return gens_.AdvanceTo(target, [&](std::unique_ptr<CountingBloomFilter>* fresh) {
    return NewGeneration(budgeted, fresh);
  }, [](std::unique_ptr<CountingBloomFilter> doomed) {
    // Off this thread when big: freeing is munmap of its touched pages
    // (filters/deferred_free.h), ~1.6 ms for 20 MB.
    const uint64_t bytes = doomed->memory_bytes();
    FreeDeferred(std::shared_ptr<void>(std::move(doomed)), bytes);
  });
}

uint64_t WindowedCountingBloomFilter::CountIn(const std::vector<Gens::Slot>& slots,
                                              const KeyHash& h, uint64_t at) const {
  uint64_t total = 0;
  for (const Gens::Slot& s : slots) {
    if (gens_.Live(s, at)) total = internal::SaturatingAdd(total, s.filter->Count(h));
  }
  return total;
}

FilterStatus WindowedCountingBloomFilter::Add(const KeyHash& h, int64_t now_ms, bool* was_new,
                                              uint64_t* count, uint64_t* generation,
                                              MemoryRefusal* refusal) {
  *was_new = false;
  *count = 0;
  if (FilterStatus s = AdvanceToGeneration(GenerationAt(now_ms), /*budgeted=*/true);
      s != FilterStatus::kOk) {
    return s;
  }
  return gens_.Shared([&](std::vector<Gens::Slot>& slots) {
    // As WindowedBloomFilter::Add: never into a generation older than current.
    const uint64_t current = gens_.current();
    bool seen = false;
    for (const Gens::Slot& s : slots) {
      if (gens_.Live(s, current) && s.filter->MayContain(h)) {
        seen = true;
        break;
      }
    }
    bool new_to_generation = false;
    Gens::Slot& slot = slots[current % slots.size()];
    if (FilterStatus s = slot.filter->Add(h, &new_to_generation, refusal); s != FilterStatus::kOk) {
      return s;
    }
    *was_new = !seen;
    *count = CountIn(slots, h, current);
    *generation = current;
    return FilterStatus::kOk;
  });
}

FilterStatus WindowedCountingBloomFilter::ReplayAdd(const KeyHash& h, uint64_t generation) {
  if (AdvanceToGeneration(generation, /*budgeted=*/true) != FilterStatus::kOk) {
    AdvanceToGeneration(generation, /*budgeted=*/false);
  }
  return gens_.Shared([&](std::vector<Gens::Slot>& slots) {
    // Dropped already: it aged out live too.
    Gens::Slot* slot = Gens::SlotOf(slots, generation);
    if (slot == nullptr) return FilterStatus::kOk;
    bool was_new = false;
    return slot->filter->Add(h, &was_new);
  });
}

bool WindowedCountingBloomFilter::Remove(const KeyHash& h, int64_t now_ms, uint64_t* generation) {
  const uint64_t at = gens_.LookupAt(now_ms);
  return gens_.Shared([&](std::vector<Gens::Slot>& slots) {
    // Newest first: back from `at` over the n + 1 live generations.
    for (uint64_t back = 0; back <= generations() && back <= at; ++back) {
      Gens::Slot* slot = Gens::SlotOf(slots, at - back);
      if (slot != nullptr && slot->filter->Remove(h)) {
        *generation = at - back;
        return true;
      }
    }
    return false;
  });
}

void WindowedCountingBloomFilter::ReplayRemove(const KeyHash& h, uint64_t generation) {
  gens_.Shared([&](std::vector<Gens::Slot>& slots) {
    if (Gens::Slot* slot = Gens::SlotOf(slots, generation)) slot->filter->Remove(h);
  });
}

bool WindowedCountingBloomFilter::MayContain(const KeyHash& h, int64_t now_ms) const {
  const uint64_t at = gens_.LookupAt(now_ms);
  return gens_.Shared([&](const std::vector<Gens::Slot>& slots) {
    for (const Gens::Slot& s : slots) {
      if (gens_.Live(s, at) && s.filter->MayContain(h)) return true;
    }
    return false;
  });
}

uint64_t WindowedCountingBloomFilter::Count(const KeyHash& h, int64_t now_ms) const {
  const uint64_t at = gens_.LookupAt(now_ms);
  return gens_.Shared(
      [&](const std::vector<Gens::Slot>& slots) { return CountIn(slots, h, at); });
}

uint64_t WindowedCountingBloomFilter::ItemsAt(int64_t now_ms) const {
  const uint64_t at = gens_.LookupAt(now_ms);
  return gens_.Shared([&](const std::vector<Gens::Slot>& slots) {
    uint64_t sum = 0;
    for (const Gens::Slot& s : slots) {
      if (gens_.Live(s, at)) sum = internal::SaturatingAdd(sum, s.filter->items());
    }
    return sum;
  });
}

uint64_t WindowedCountingBloomFilter::memory_bytes() const {
  return sizeof(*this) + gens_.memory_bytes();
}

}  // namespace bloomgate
