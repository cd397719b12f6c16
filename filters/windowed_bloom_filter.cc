#include "filters/windowed_bloom_filter.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <utility>

#include "filters/hash_seed.h"

namespace bloomgate {

double WindowedBloomFilter::GenerationErrorRate(double error_rate, uint32_t generations) {
  // Union bound over the n + 1 live generations (see "Sizing" in the header).
  return std::min(error_rate, kMaxBloomErrorRate) / (static_cast<double>(generations) + 1);
}

uint64_t WindowedBloomFilter::GenerationCapacity(uint64_t capacity, uint32_t generations) {
  return std::max<uint64_t>(1, capacity / generations + (capacity % generations != 0 ? 1 : 0));
}

FilterStatus WindowedBloomFilter::Check(const WindowedBloomOptions& o) {
  if (!(o.error_rate > 0 && o.error_rate < 1) || o.capacity == 0 || o.expansion == 0 ||
      o.expansion > kMaxBloomExpansion || o.generations == 0 ||
      o.generations > kMaxWindowGenerations || o.window_ms < o.generations ||
      o.window_ms > kMaxWindowMs) {
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
      window_ms_(o.window_ms),
      generations_(o.generations),
      // Rounded up so that n periods cover at least the window: an item is
      // never dropped before t + W (at most n - 1 ms late at the far edge).
      period_ms_((o.window_ms + o.generations - 1) / o.generations),
      origin_ms_(origin_ms),
      hash_seed_(seed),
      limits_(limits),
      budget_(budget),
      slots_(o.generations + 1) {}

WindowedBloomFilter::~WindowedBloomFilter() = default;

FilterStatus WindowedBloomFilter::NewGeneration(bool budgeted,
                                                std::unique_ptr<ScalableBloomFilter>* out) const {
  ScalableBloomOptions options;
  options.error_rate = GenerationErrorRate(error_rate_, generations_);
  options.capacity = GenerationCapacity(capacity_, generations_);
  options.expansion = expansion_;
  options.hash_seed = hash_seed_;
  FilterLimits limits = limits_;
  if (!budgeted) limits.max_filter_bytes = 0;  // replay never refuses
  return ScalableBloomFilter::Create(options, limits, budgeted ? budget_ : nullptr, out);
}

FilterStatus WindowedBloomFilter::Create(const WindowedBloomOptions& options, int64_t now_ms,
                                         const FilterLimits& limits, MemoryBudget* budget,
                                         std::unique_ptr<WindowedBloomFilter>* out) {
  out->reset();
  if (FilterStatus s = Check(options); s != FilterStatus::kOk) return s;
  const uint64_t seed = options.hash_seed ? *options.hash_seed : NewHashSeed();
  std::unique_ptr<WindowedBloomFilter> filter(
      new (std::nothrow) WindowedBloomFilter(options, seed, now_ms, limits, budget));
  if (filter == nullptr) return FilterStatus::kOutOfMemory;
  std::unique_ptr<ScalableBloomFilter> first;
  if (FilterStatus s = filter->NewGeneration(/*budgeted=*/true, &first); s != FilterStatus::kOk) {
    return s;
  }
  filter->slots_[0].filter = std::move(first);
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
  if (!options.hash_seed || slots.size() != options.generations + 1) {
    return FilterStatus::kInvalidOptions;
  }
  bool has_current = false;
  for (size_t i = 0; i < slots.size(); ++i) {
    const RestoredSlot& s = slots[i];
    if (s.filter == nullptr) continue;
    if (s.generation % slots.size() != i || s.generation > current_generation ||
        s.filter->hash_seed() != *options.hash_seed || s.filter->expansion() != options.expansion) {
      return FilterStatus::kInvalidOptions;
    }
    has_current |= s.generation == current_generation;
  }
  if (!has_current) return FilterStatus::kInvalidOptions;
  std::unique_ptr<WindowedBloomFilter> filter(new (std::nothrow) WindowedBloomFilter(
      options, *options.hash_seed, origin_ms, limits, budget));
  if (filter == nullptr) return FilterStatus::kOutOfMemory;
  for (size_t i = 0; i < slots.size(); ++i) {
    filter->slots_[i].generation = slots[i].generation;
    filter->slots_[i].new_items.store(slots[i].new_items, std::memory_order_relaxed);
    filter->slots_[i].filter = std::move(slots[i].filter);
  }
  filter->current_.store(current_generation, std::memory_order_release);
  *out = std::move(filter);
  return FilterStatus::kOk;
}

uint64_t WindowedBloomFilter::GenerationAt(int64_t now_ms) const {
  if (now_ms <= origin_ms_) return 0;
  return static_cast<uint64_t>(now_ms - origin_ms_) / period_ms_;
}

int64_t WindowedBloomFilter::GenerationAgeMs(int64_t now_ms) const {
  if (now_ms <= origin_ms_) return 0;
  return static_cast<int64_t>(static_cast<uint64_t>(now_ms - origin_ms_) % period_ms_);
}

FilterStatus WindowedBloomFilter::AdvanceTo(int64_t now_ms) {
  return AdvanceToGeneration(GenerationAt(now_ms), /*budgeted=*/true);
}

FilterStatus WindowedBloomFilter::AdvanceToGeneration(uint64_t target, bool budgeted) {
  if (current_.load(std::memory_order_acquire) >= target) return FilterStatus::kOk;
  std::lock_guard advance(advance_mutex_);
  const uint64_t current = current_.load(std::memory_order_acquire);
  if (current >= target) return FilterStatus::kOk;  // another thread did it
  // Only the last n + 1 of the generations passed can be live at `target`;
  // a longer gap (an idle spell, a restart) replaces every slot once.
  const uint64_t slots = generations_ + 1;
  const uint64_t first = std::max(current + 1, target >= slots ? target - slots + 1 : 0);
  // Only the generation `target` gets a filter now; older ones that passed
  // without an add stay empty. The fresh filter is built (and its bits
  // zeroed) before the swap, outside the lookup lock.
  std::unique_ptr<ScalableBloomFilter> fresh;
  if (FilterStatus s = NewGeneration(budgeted, &fresh); s != FilterStatus::kOk) {
    if (budgeted) return s;
    return s;  // unbudgeted creation fails only when allocation fails
  }
  std::vector<std::unique_ptr<ScalableBloomFilter>> dropped;  // freed after the unlock
  dropped.reserve(target - first + 1);
  {
    std::unique_lock lock(slots_mutex_);
    for (uint64_t g = first; g <= target; ++g) {
      Slot& slot = slots_[g % slots];
      dropped.push_back(std::move(slot.filter));
      slot.generation = g;
      slot.new_items.store(0, std::memory_order_relaxed);
    }
    slots_[target % slots].filter = std::move(fresh);
    current_.store(target, std::memory_order_release);
  }
  return FilterStatus::kOk;
}

FilterStatus WindowedBloomFilter::Add(const KeyHash& h, int64_t now_ms, bool* seen,
                                      uint64_t* generation, bool* added_to_generation) {
  *seen = false;
  *added_to_generation = false;
  const uint64_t target = GenerationAt(now_ms);
  if (FilterStatus s = AdvanceToGeneration(target, /*budgeted=*/true); s != FilterStatus::kOk) {
    return s;
  }
  std::shared_lock lock(slots_mutex_);
  // `current` may be past `target` when another thread's clock read came
  // later; the add then goes to that newer generation (never an older one).
  const uint64_t current = current_.load(std::memory_order_acquire);
  Slot& slot = slots_[current % slots_.size()];
  bool found = false;
  for (const Slot& s : slots_) {
    if (Live(s, current) && s.filter->MayContain(h)) {
      found = true;
      break;
    }
  }
  bool added = false;
  if (FilterStatus s = slot.filter->Add(h, &added); s != FilterStatus::kOk) return s;
  if (!found) slot.new_items.fetch_add(1, std::memory_order_relaxed);
  *seen = found;
  *generation = current;
  *added_to_generation = added;
  return FilterStatus::kOk;
}

void WindowedBloomFilter::ReplayAdd(const KeyHash& h, uint64_t generation, bool seen,
                                    bool added_to_generation) {
  // Budgeted first, as the live add was; outside the budget only if refused.
  if (AdvanceToGeneration(generation, /*budgeted=*/true) != FilterStatus::kOk) {
    AdvanceToGeneration(generation, /*budgeted=*/false);
  }
  std::shared_lock lock(slots_mutex_);
  Slot& slot = slots_[generation % slots_.size()];
  // Dropped already (the record is older than n + 1 generations before the
  // newest one replayed): it aged out live too.
  if (slot.generation != generation || slot.filter == nullptr) return;
  slot.filter->ReplayAdd(h, added_to_generation);
  if (!seen) slot.new_items.fetch_add(1, std::memory_order_relaxed);
}

bool WindowedBloomFilter::MayContain(const KeyHash& h, int64_t now_ms) const {
  const uint64_t at = std::max(GenerationAt(now_ms), current_.load(std::memory_order_acquire));
  std::shared_lock lock(slots_mutex_);
  for (const Slot& s : slots_) {
    if (Live(s, at) && s.filter->MayContain(h)) return true;
  }
  return false;
}

uint64_t WindowedBloomFilter::ItemsAt(int64_t now_ms) const {
  const uint64_t at = std::max(GenerationAt(now_ms), current_.load(std::memory_order_acquire));
  std::shared_lock lock(slots_mutex_);
  uint64_t sum = 0;
  for (const Slot& s : slots_) {
    if (Live(s, at)) sum += s.new_items.load(std::memory_order_relaxed);
  }
  return sum;
}

uint64_t WindowedBloomFilter::memory_bytes() const {
  std::shared_lock lock(slots_mutex_);
  uint64_t sum = sizeof(*this) + slots_.size() * sizeof(Slot);
  for (const Slot& s : slots_) {
    if (s.filter != nullptr) sum += s.filter->memory_bytes();
  }
  return sum;
}

}  // namespace bloomgate
