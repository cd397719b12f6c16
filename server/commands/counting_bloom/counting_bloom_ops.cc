#include "server/commands/counting_bloom/counting_bloom_ops.h"

#include <algorithm>

#include <memory>
#include <utility>

#include "filters/counting_bloom_filter.h"
#include "filters/key_hash.h"
#include "server/commands/windowed_counting/windowed_counting_ops.h"

namespace bloomgate {

BloomStatus ReserveCounting(FilterStore& store, const KeyRef& key, const BloomParams& params) {
  switch (ReserveConflict<CountingBloomFilter>(store, key)) {
    case Lookup::kFound: return BloomStatus::kItemExists;
    case Lookup::kWrongType: return BloomStatus::kWrongType;
    case Lookup::kOutOfMemory: return BloomStatus::kSnapshotCopyOom;
    case Lookup::kMissing: break;
  }
  EntryPtr entry;
  return CreateCounting(store, key, params, /*fail_if_exists=*/true, &entry);
}

BloomStatus CreateCounting(FilterStore& store, const KeyRef& key, const BloomParams& params,
                           bool fail_if_exists, EntryPtr* entry) {
  entry->reset();
  if (params.error_rate < kMinBloomErrorRate) return BloomStatus::kErrorRateFloor;
  if (params.window_ms != 0) {
    return CreateWindowedCounting(store, key, params, fail_if_exists, entry);
  }
  CountingBloomOptions options;
  options.error_rate = params.error_rate;
  options.capacity = params.capacity;
  options.expansion = params.expansion;
  options.counter_bits = params.counter_bits;
  options.hash_seed = params.seed;
  std::unique_ptr<CountingBloomFilter> filter;
  if (FilterStatus s =
          CountingBloomFilter::Create(options, store.limits, store.budget, &filter, &store.refusal);
      s != FilterStatus::kOk) {
    return BloomCreateStatus(s, store.refusal);
  }
  return BloomStatusOf(StoreNewFilter(store, key, std::move(filter), fail_if_exists, entry));
}

BloomStatus FindOrCreateCounting(FilterStore& store, const KeyRef& key, const CreateRule& rule,
                                 EntryPtr* entry) {
  const Lookup lookup = FindFilter<CountingBloomFilter>(store, key, entry);
  if (lookup != Lookup::kMissing || !rule.create) {
    return BloomLookupStatus(lookup, /*missing=*/BloomStatus::kNotFound);
  }
  return CreateCounting(store, key, rule.Resolve(store.config), /*fail_if_exists=*/false,
                        entry);
}

BloomAddResult AddCountingItems(KeyEntry& entry, std::span<const std::string_view> items) {
  BloomAddResult result;
  result.added.reserve(items.size());
  CountingBloomFilter& filter = *entry.get<CountingBloomFilter>();
  // In chunks of kBloomBatchItems, as BF.MADD: every item of a chunk hashed
  // first, then the filter's AddBatch (prefetch every layer's line, then one
  // pass per item). Exclusive writes: CBF.* writes hold their key
  // exclusively (FamilyWrites::kExclusive), and so does replay, which runs
  // the command again on one thread.
  KeyHash hashes[kBloomBatchItems];
  bool was_new[kBloomBatchItems];
  for (size_t start = 0; start < items.size(); start += kBloomBatchItems) {
    const size_t count = std::min(kBloomBatchItems, items.size() - start);
    for (size_t i = 0; i < count; ++i) hashes[i] = filter.Hash(items[start + i]);
    size_t done = 0;
    const FilterStatus status =
        filter.AddBatch({hashes, count}, was_new, &done, CounterWrites::kExclusive,
                        &result.refusal);
    for (size_t i = 0; i < done; ++i) result.added.push_back(was_new[i]);
    if (status != FilterStatus::kOk) {
      result.status = BloomAddStatus(status);
      break;
    }
  }
  if (!result.added.empty()) entry.MarkModified();
  return result;
}

CountingIncrResult IncrCountingItems(KeyEntry& entry, std::span<const std::string_view> items) {
  CountingIncrResult result;
  result.counts.reserve(items.size());
  CountingBloomFilter& filter = *entry.get<CountingBloomFilter>();
  for (std::string_view item : items) {
    const KeyHash h = filter.Hash(item);
    bool was_new = false;
    if (const FilterStatus status = filter.Add(h, &was_new, &result.refusal);
        status != FilterStatus::kOk) {
      result.status = BloomAddStatus(status);
      break;
    }
    result.counts.push_back(filter.Count(h));
  }
  if (!result.counts.empty()) entry.MarkModified();
  return result;
}

std::vector<bool> DeleteCountingItems(KeyEntry& entry, std::span<const std::string_view> items) {
  CountingBloomFilter& filter = *entry.get<CountingBloomFilter>();
  std::vector<bool> removed;
  removed.reserve(items.size());
  bool changed = false;
  for (std::string_view item : items) {
    removed.push_back(filter.Remove(filter.Hash(item)));
    changed |= removed.back();
  }
  if (changed) {
    entry.MarkModified();
  } else {
    entry.MarkTouched();  // nothing to delete: WATCH still sees the write
  }
  return removed;
}

}  // namespace bloomgate
