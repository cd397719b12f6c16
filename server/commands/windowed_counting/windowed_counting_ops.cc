#include "server/commands/windowed_counting/windowed_counting_ops.h"

#include <charconv>
#include <memory>
#include <utility>

#include "filters/windowed_counting_bloom_filter.h"
#include "server/durability/journal.h"

namespace bloomgate {

BloomStatus CreateWindowedCounting(FilterStore& store, const KeyRef& key,
                                   const BloomParams& params, bool fail_if_exists,
                                   EntryPtr* entry) {
  entry->reset();
  WindowedCountingBloomOptions options;
  options.error_rate = params.error_rate;
  options.capacity = params.capacity;
  options.expansion = params.expansion;
  options.counter_bits = params.counter_bits;
  options.window_ms = params.window_ms;
  options.generations = params.generations;
  options.hash_seed = params.seed;
  std::unique_ptr<WindowedCountingBloomFilter> filter;
  if (FilterStatus s = WindowedCountingBloomFilter::Create(options, store.window_now_ms,
                                                           store.limits, store.budget, &filter,
                                                           &store.refusal);
      s != FilterStatus::kOk) {
    return BloomCreateStatus(s, store.refusal);
  }
  return BloomStatusOf(StoreNewFilter(store, key, std::move(filter), fail_if_exists, entry));
}

WindowCountResult AddWindowedCountingItems(KeyEntry& entry, std::span<const std::string_view> items,
                                           int64_t now_ms) {
  WindowCountResult result;
  WindowedCountingBloomFilter& filter = *entry.get<WindowedCountingBloomFilter>();
  for (std::string_view item : items) {
    bool was_new = false;
    uint64_t count = 0, generation = 0;
    const FilterStatus status =
        filter.Add(filter.Hash(item), now_ms, &was_new, &count, &generation, &result.refusal);
    if (status != FilterStatus::kOk) {
      result.status = BloomAddStatus(status);
      break;
    }
    result.done.push_back(was_new);
    result.counts.push_back(count);
    result.generations.push_back(generation);
  }
  if (!result.done.empty()) entry.MarkModified();
  return result;
}

WindowCountResult DeleteWindowedCountingItems(KeyEntry& entry,
                                              std::span<const std::string_view> items,
                                              int64_t now_ms) {
  WindowCountResult result;
  WindowedCountingBloomFilter& filter = *entry.get<WindowedCountingBloomFilter>();
  bool changed = false;
  for (std::string_view item : items) {
    uint64_t generation = 0;
    const bool removed = filter.Remove(filter.Hash(item), now_ms, &generation);
    result.done.push_back(removed);
    result.generations.push_back(generation);
    changed |= removed;
  }
  if (changed) {
    entry.MarkModified();
  } else {
    entry.MarkTouched();  // nothing to delete: WATCH still sees the write
  }
  return result;
}

void WindowCountEffect(std::string_view key, std::span<const std::string_view> items,
                       const WindowCountResult& result, bool deleted, std::string* storage,
                       std::vector<std::string_view>* effect) {
  effect->clear();
  std::vector<size_t> which;  // items that took effect
  for (size_t i = 0; i < result.done.size(); ++i) {
    if (!deleted || result.done[i]) which.push_back(i);
  }
  if (which.empty()) return;
  // Fill the storage first, then take views into it (it never moves after).
  storage->assign(which.size(), deleted ? '-' : '+');
  std::vector<size_t> ends;
  ends.reserve(which.size());
  for (size_t i : which) {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), result.generations[i]);
    storage->append(digits, end);
    ends.push_back(storage->size());
  }
  const std::string_view all(*storage);
  effect->reserve(3 + 2 * which.size());
  effect->assign({kWindowCountEffect, key, all.substr(0, which.size())});
  size_t begin = which.size();
  for (size_t n = 0; n < which.size(); ++n) {
    effect->push_back(all.substr(begin, ends[n] - begin));
    effect->push_back(items[which[n]]);
    begin = ends[n];
  }
}

}  // namespace bloomgate
