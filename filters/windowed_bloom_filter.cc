#include "filters/windowed_bloom_filter.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <utility>

#include "filters/deferred_free.h"
#include "filters/hash_seed.h"

namespace bloomgate {

double WindowedBloomFilter::GenerationErrorRate(double error_rate, uint32_t generations) {
  // Union bound over the n + 1 live generations (see "Sizing" in the header).
  return WindowGenerationErrorRate(error_rate, kMaxBloomErrorRate, generations);
}

uint64_t WindowedBloomFilter::GenerationCapacity(uint64_t capacity, uint32_t generations) {
  return WindowGenerationCapacity(capacity, generations);
}

FilterStatus WindowedBloomFilter::Check(const WindowedBloomOptions& o) {
  if (!(o.error_rate > 0 && o.error_rate < 1) || o.capacity == 0 || o.expansion == 0 ||
      o.expansion > kMaxBloomExpansion || !IsWindowShape(o.window_ms, o.generations)) {
    return FilterStatus::kInvalidOptions;
  }
  return FilterStatus::kOk;
}

WindowedBloomFilter::WindowedBloomFilter(const WindowedBloomOptions& o, uint64_t seed,
                                         int64_t origin_ms, const FilterLimits& limits,
                                         MemoryBudget* budget)
    : error_rate_(std::min(o.error_rate, kMaxBloomErrorRate)),
      capacity_(o.capacity),
      expansion_(o.expansion),
      hash_seed_(seed),
      limits_(limits),
      budget_(budget),
      gens_(o.window_ms, o.generations, origin_ms) {}

WindowedBloomFilter::~WindowedBloomFilter() = default;

ScalableBloomOptions WindowedBloomFilter::GenerationOptions() const {
  ScalableBloomOptions options;
  options.error_rate = GenerationErrorRate(error_rate_, generations());
  options.capacity = GenerationCapacity(capacity_, generations());
  options.expansion = expansion_;
  options.hash_seed = hash_seed_;
  return options;
}

FilterStatus WindowedBloomFilter::NewGeneration(bool budgeted,
                                                std::unique_ptr<ScalableBloomFilter>* out,
                                                MemoryRefusal* refusal) const {
  FilterLimits limits = limits_;
  if (!budgeted) limits.max_filter_bytes = 0;  // replay never refuses
  return ScalableBloomFilter::Create(GenerationOptions(), limits, budgeted ? budget_ : nullptr,
                                     out, refusal);
}

void WindowedBloomFilter::EnablePreparation() {
  // Copies, not `this`: the job may outlive the filter (window_generations.h).
  gens_.EnablePreparation([options = GenerationOptions(), limits = limits_, budget = budget_](
                              std::unique_ptr<ScalableBloomFilter>* out) {
    return ScalableBloomFilter::Create(options, limits, budget, out);
  });
}

FilterStatus WindowedBloomFilter::Create(const WindowedBloomOptions& options, int64_t now_ms,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         std::unique_ptr<WindowedBloomFilter>* out,
                                         MemoryRefusal* refusal) {
  out->reset();
  if (FilterStatus s = Check(options); s != FilterStatus::kOk) return s;
  const uint64_t seed = options.hash_seed ? *options.hash_seed : NewHashSeed();
  std::unique_ptr<WindowedBloomFilter> filter(
      new (std::nothrow) WindowedBloomFilter(
      options, seed, AlignedWindowOrigin(now_ms, options.window_ms, options.generations), limits,
      budget));
  if (filter == nullptr) return FilterStatus::kOutOfMemory;
  std::unique_ptr<ScalableBloomFilter> first;
  if (FilterStatus s = filter->NewGeneration(/*budgeted=*/true, &first, refusal); s != FilterStatus::kOk) {
    return s;
  }
  filter->gens_.SetFirst(std::move(first));
  filter->EnablePreparation();
  *out = std::move(filter);
  return FilterStatus::kOk;
}

FilterStatus WindowedBloomFilter::Restore(const WindowedBloomOptions& options, int64_t origin_ms,
                                          uint64_t current_generation,
                                          std::vector<RestoredSlot> slots,
                                          const FilterLimits& limits, MemoryBudget* budget,
                                          std::unique_ptr<WindowedBloomFilter>* out) {
  out->reset();
  if (FilterStatus s = Check(options); s != FilterStatus::kOk) return s;
  if (!options.hash_seed) return FilterStatus::kInvalidOptions;
  std::unique_ptr<WindowedBloomFilter> filter(new (std::nothrow) WindowedBloomFilter(
      options, *options.hash_seed, origin_ms, limits, budget));
  if (filter == nullptr) return FilterStatus::kOutOfMemory;
  const bool ok = filter->gens_.Restore(current_generation, &slots, [&](const ScalableBloomFilter& g) {
    return g.hash_seed() == *options.hash_seed && g.expansion() == options.expansion;
  });
  if (!ok) return FilterStatus::kInvalidOptions;
  filter->EnablePreparation();
  *out = std::move(filter);
  return FilterStatus::kOk;
}

uint64_t WindowedBloomFilter::GenerationAt(int64_t now_ms) const {
  return gens_.GenerationAt(now_ms);
}

int64_t WindowedBloomFilter::GenerationAgeMs(int64_t now_ms) const {
  return gens_.GenerationAgeMs(now_ms);
}

FilterStatus WindowedBloomFilter::AdvanceTo(int64_t now_ms) {
  return AdvanceToGeneration(GenerationAt(now_ms), /*budgeted=*/true);
}

FilterStatus WindowedBloomFilter::AdvanceToGeneration(uint64_t target, bool budgeted) {
  return gens_.AdvanceTo(target, [&](std::unique_ptr<ScalableBloomFilter>* fresh) {
    return NewGeneration(budgeted, fresh);
  }, [](std::unique_ptr<ScalableBloomFilter> doomed) {
    // Off this thread when big: freeing is munmap of its touched pages
    // (filters/deferred_free.h), ~1.6 ms for 20 MB.
    const uint64_t bytes = doomed->memory_bytes();
    FreeDeferred(std::shared_ptr<void>(std::move(doomed)), bytes);
  });
}

FilterStatus WindowedBloomFilter::Add(const KeyHash& h, int64_t now_ms, bool* seen,
                                      uint64_t* generation, bool* added_to_generation,
                                      MemoryRefusal* refusal) {
  *seen = false;
  *added_to_generation = false;
  const uint64_t target = GenerationAt(now_ms);
  if (FilterStatus s = AdvanceToGeneration(target, /*budgeted=*/true); s != FilterStatus::kOk) {
    return s;
  }
  return gens_.Shared([&](std::vector<Gens::Slot>& slots) {
    // `current` may be past `target` when another thread's clock read came
    // later; the add then goes to that newer generation (never an older one).
    const uint64_t current = gens_.current();
    Gens::Slot& slot = slots[current % slots.size()];
    bool found = false;
    for (const Gens::Slot& s : slots) {
      if (gens_.Live(s, current) && s.filter->MayContain(h)) {
        found = true;
        break;
      }
    }
    bool added = false;
    if (FilterStatus s = slot.filter->Add(h, &added, refusal); s != FilterStatus::kOk) return s;
    if (!found) slot.new_items.fetch_add(1, std::memory_order_relaxed);
    *seen = found;
    *generation = current;
    *added_to_generation = added;
    return FilterStatus::kOk;
  });
}

void WindowedBloomFilter::ReplayAdd(const KeyHash& h, uint64_t generation, bool seen,
                                    bool added_to_generation) {
  // Budgeted first, as the live add was; outside the budget only if refused.
  if (AdvanceToGeneration(generation, /*budgeted=*/true) != FilterStatus::kOk) {
    AdvanceToGeneration(generation, /*budgeted=*/false);
  }
  gens_.Shared([&](std::vector<Gens::Slot>& slots) {
    // Dropped already (the record is older than n + 1 generations before the
    // newest one replayed): it aged out live too.
    Gens::Slot* slot = Gens::SlotOf(slots, generation);
    if (slot == nullptr) return;
    slot->filter->ReplayAdd(h, added_to_generation);
    if (!seen) slot->new_items.fetch_add(1, std::memory_order_relaxed);
  });
}

bool WindowedBloomFilter::MayContain(const KeyHash& h, int64_t now_ms) const {
  const uint64_t at = gens_.LookupAt(now_ms);
  return gens_.Shared([&](const std::vector<Gens::Slot>& slots) {
    for (const Gens::Slot& s : slots) {
      if (gens_.Live(s, at) && s.filter->MayContain(h)) return true;
    }
    return false;
  });
}

uint64_t WindowedBloomFilter::ItemsAt(int64_t now_ms) const {
  const uint64_t at = gens_.LookupAt(now_ms);
  return gens_.Shared([&](const std::vector<Gens::Slot>& slots) {
    uint64_t sum = 0;
    for (const Gens::Slot& s : slots) {
      if (gens_.Live(s, at)) sum += s.new_items.load(std::memory_order_relaxed);
    }
    return sum;
  });
}

uint64_t WindowedBloomFilter::memory_bytes() const { return sizeof(*this) + gens_.memory_bytes(); }

}  // namespace bloomgate
