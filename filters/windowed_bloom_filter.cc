#include "filters/windowed_bloom_filter.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace bloomgate {

double WindowedBloomFilter::GenerationErrorRate(double error_rate, uint32_t generations) {
  // Union bound over the n + 1 live generations (see "Sizing" in the header).
  return WindowGenerationErrorRate(error_rate, kMaxBloomErrorRate, generations);
}

uint64_t WindowedBloomFilter::GenerationCapacity(uint64_t capacity, uint32_t generations) {
  return WindowGenerationCapacity(capacity, generations);
}

WindowedBloomFilter::~WindowedBloomFilter() = default;

ScalableBloomOptions WindowedBloomFilter::GenerationOptions() const {
  ScalableBloomOptions options;
  options.error_rate = GenerationErrorRate(error_rate_, generations());
  options.capacity = GenerationCapacity(capacity_, generations());
  options.expansion = expansion_;
  options.hash_seed = hash_seed_;
  return options;
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

}  // namespace bloomgate
