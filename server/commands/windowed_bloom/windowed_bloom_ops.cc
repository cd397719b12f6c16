#include "server/commands/windowed_bloom/windowed_bloom_ops.h"

#include <charconv>
#include <memory>
#include <utility>

#include "filters/windowed_bloom_filter.h"

namespace bloomgate {

BloomStatus CreateWindowedBloom(FilterStore& store, const KeyRef& key, const BloomParams& params,
                                bool fail_if_exists, EntryPtr* entry) {
  entry->reset();
  WindowedBloomOptions options;
  options.error_rate = params.error_rate;
  options.capacity = params.capacity;
  options.expansion = params.expansion;
  options.window_ms = params.window_ms;
  options.generations = params.generations;
  options.hash_seed = params.seed;
  std::unique_ptr<WindowedBloomFilter> filter;
  if (FilterStatus s = WindowedBloomFilter::Create(options, store.window_now_ms, store.limits,
                                                   store.budget, &filter, &store.refusal);
      s != FilterStatus::kOk) {
    return BloomCreateStatus(s, store.refusal);
  }
  return BloomStatusOf(StoreNewFilter(store, key, std::move(filter), fail_if_exists, entry));
}

WindowAddResult AddWindowedItems(KeyEntry& entry, std::span<const std::string_view> items,
                                 int64_t now_ms) {
  WindowAddResult result;
  WindowedBloomFilter& filter = *entry.get<WindowedBloomFilter>();
  for (std::string_view item : items) {
    bool seen = false, flipped = false;
    uint64_t generation = 0;
    const FilterStatus status =
        filter.Add(filter.Hash(item), now_ms, &seen, &generation, &flipped, &result.refusal);
    if (status != FilterStatus::kOk) {
      result.status = BloomAddStatus(status);
      break;
    }
    result.added.push_back(!seen);
    result.generations.push_back(generation);
    result.added_to_generation.push_back(flipped);
  }
  // Every add changes a windowed filter (it refreshes the item's generation
  // and may turn one over), so WATCH sees each.
  if (!result.added.empty()) entry.MarkModified();
  return result;
}

char WindowAddFlag(bool new_to_window, bool added_to_generation) {
  return static_cast<char>('0' + (new_to_window ? 1 : 0) + (added_to_generation ? 2 : 0));
}

bool ParseWindowAddFlag(char flag, bool* new_to_window, bool* added_to_generation) {
  if (flag < '0' || flag > '3') return false;
  *new_to_window = ((flag - '0') & 1) != 0;
  *added_to_generation = ((flag - '0') & 2) != 0;
  return true;
}

void WindowAddedEffect(std::string_view key, std::span<const std::string_view> items,
                       const WindowAddResult& result, std::string* storage,
                       std::vector<std::string_view>* effect) {
  effect->clear();
  const size_t applied = result.added.size();
  if (applied == 0) return;
  // Fill the storage first, then take views into it (it never moves after).
  storage->clear();
  std::vector<size_t> ends;
  ends.reserve(applied);
  for (size_t i = 0; i < applied; ++i) {
    storage->push_back(WindowAddFlag(result.added[i], result.added_to_generation[i]));
  }
  for (size_t i = 0; i < applied; ++i) {
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), result.generations[i]);
    storage->append(digits, end);
    ends.push_back(storage->size());
  }
  const std::string_view all(*storage);
  effect->reserve(3 + 2 * applied);
  effect->assign({kWindowAddedEffect, key, all.substr(0, applied)});
  size_t begin = applied;
  for (size_t i = 0; i < applied; ++i) {
    effect->push_back(all.substr(begin, ends[i] - begin));
    effect->push_back(items[i]);
    begin = ends[i];
  }
}

}  // namespace bloomgate
