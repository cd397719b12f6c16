#include "filters/windowed_counting_bloom_filter.h"

#include <algorithm>
#include <utility>

#include "filters/memory_reservation.h"

namespace bloomgate {

FilterStatus WindowedCountingBloomFilter::Check(const WindowedCountingBloomOptions& o) {
  if (o.counter_bits != kCountingBloomNarrowCounterBits &&
      o.counter_bits != kCountingBloomWideCounterBits) {
    return FilterStatus::kInvalidOptions;
  }
  return FilterStatus::kOk;
}

WindowedCountingBloomFilter::WindowedCountingBloomFilter(const WindowedCountingBloomOptions& o,
                                                         uint64_t seed, int64_t origin_ms,
                                                         const FilterLimits& limits,
                                                         MemoryBudget* budget)
    : WindowedFilter(o, seed, origin_ms, limits, budget),
      counter_bits_(o.counter_bits),
      layout_(o.layout.value_or(PreferredCountingLayout(
          WindowGenerationErrorRate(error_rate_, kMaxBloomErrorRate, o.generations),
          o.expansion))) {}

WindowedCountingBloomFilter::~WindowedCountingBloomFilter() = default;

bool WindowedCountingBloomFilter::AcceptsGeneration(const CountingBloomFilter& g) const {
  return g.counter_bits() == counter_bits_ && g.layout() == layout_;
}

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

}  // namespace bloomgate
