#include "server/commands/bloom/bloom_ops.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "filters/key_hash.h"
#include "filters/scalable_bloom_filter.h"
#include "server/commands/errors.h"
#include "server/commands/windowed_bloom/windowed_bloom_ops.h"

namespace bloomgate {

std::string_view ToString(BloomStatus status) {
  switch (status) {
    case BloomStatus::kOk: return "ok";
    case BloomStatus::kNotFound: return "not found";
    case BloomStatus::kWrongType: return "wrong type";
    case BloomStatus::kItemExists: return "item exists";
    case BloomStatus::kCreateOverFilterMemory: return "create over max-filter-memory";
    case BloomStatus::kCreateOverMaxmemory: return "create over maxmemory";
    case BloomStatus::kCreateFailed: return "create failed";
    case BloomStatus::kGrowOverFilterMemory: return "growth over max-filter-memory";
    case BloomStatus::kNonScalingFull: return "non-scaling full";
    case BloomStatus::kOutOfMemory: return "out of memory";
    case BloomStatus::kSnapshotCopyOom: return "snapshot copy out of memory";
    case BloomStatus::kProblemInserting: return "problem inserting";
    case BloomStatus::kMergeMismatch: return "merge mismatch";
    case BloomStatus::kTooManyLayers: return "too many layers";
    case BloomStatus::kErrorRateFloor: return "error rate below the floor";
    case BloomStatus::kMergeUnsupported: return "merge unsupported";
    case BloomStatus::kTooLargeToLog: return "too large to log";
    case BloomStatus::kErrorRateUnderflow: return "error rate underflow";
    case BloomStatus::kScaleToOverMemory: return "scale-to over max-filter-memory";
    case BloomStatus::kScaleToErrorUnderflow: return "scale-to error rate underflow";
    case BloomStatus::kScaleToTooManyLayers: return "scale-to too many layers";
    case BloomStatus::kScaleToNonScaling: return "scale-to non-scaling";
  }
  return "unknown";
}

std::string_view BloomStatusText(BloomStatus status) {
  switch (status) {
    case BloomStatus::kOk: return {};
    case BloomStatus::kNotFound: return errors::kNotFound;
    case BloomStatus::kWrongType: return errors::kWrongType;
    case BloomStatus::kItemExists: return errors::kItemExists;
    // RedisBloom's one text for every creation failure; all are memory
    // limits, the parameters having been validated before
    // (BloomFailureText adds which one).
    case BloomStatus::kCreateOverFilterMemory:
    case BloomStatus::kCreateOverMaxmemory:
    case BloomStatus::kCreateFailed: return errors::kInsufficientMemory;
    case BloomStatus::kGrowOverFilterMemory: return errors::kProblemInserting;
    case BloomStatus::kNonScalingFull: return errors::kNonScalingFull;
    case BloomStatus::kOutOfMemory: return errors::kOom;
    case BloomStatus::kProblemInserting: return errors::kProblemInserting;
    // Redis's text: the refusal is maxmemory's, not the filter's.
    case BloomStatus::kSnapshotCopyOom: return errors::kOom;
    // MergeFailureText (bloom_merge.h) names the difference; these are
    // the texts without it.
    case BloomStatus::kMergeMismatch: return errors::kMergeMismatch;
    case BloomStatus::kMergeUnsupported: return errors::kMergeUnsupported;
    case BloomStatus::kTooManyLayers: return errors::kTooManyLayers;
    case BloomStatus::kErrorRateFloor: return errors::kErrorRateFloor;
    case BloomStatus::kTooLargeToLog: return errors::kTooLargeToLog;
    case BloomStatus::kErrorRateUnderflow: return errors::kErrorRateUnderflow;
    case BloomStatus::kScaleToOverMemory: return errors::kValidateScaleToOverMemory;
    case BloomStatus::kScaleToErrorUnderflow: return errors::kValidateScaleToErrorUnderflow;
    case BloomStatus::kScaleToTooManyLayers: return errors::kValidateScaleToTooManyLayers;
    case BloomStatus::kScaleToNonScaling: return errors::kNonScalingValidateScaleTo;
  }
  return errors::kProblemInserting;
}

std::string BloomFailureText(BloomStatus status, const MemoryRefusal& refusal) {
  switch (status) {
    case BloomStatus::kCreateOverFilterMemory:
    case BloomStatus::kCreateOverMaxmemory:
    case BloomStatus::kCreateFailed:
      return errors::MemoryRefused(BloomStatusText(status), refusal, /*growth=*/false);
    case BloomStatus::kOutOfMemory:
    case BloomStatus::kGrowOverFilterMemory:
      return errors::MemoryRefused(BloomStatusText(status), refusal, /*growth=*/true);
    default: break;
  }
  return std::string(BloomStatusText(status));
}

BloomStatus BloomCreateStatus(FilterStatus status, const MemoryRefusal& refusal) {
  if (status == FilterStatus::kFilterMemoryLimit) return BloomStatus::kCreateOverFilterMemory;
  if (refusal.limit == MemoryRefusal::Limit::kBudget) return BloomStatus::kCreateOverMaxmemory;
  return BloomStatus::kCreateFailed;
}

BloomStatus BloomAddStatus(FilterStatus status) {
  switch (status) {
    case FilterStatus::kOk:
      return BloomStatus::kOk;
    case FilterStatus::kFull:
      return BloomStatus::kNonScalingFull;
    case FilterStatus::kOutOfMemory:
      return BloomStatus::kOutOfMemory;
    case FilterStatus::kTooManyLayers:
      return BloomStatus::kTooManyLayers;
    case FilterStatus::kFilterMemoryLimit:
      return BloomStatus::kGrowOverFilterMemory;
    case FilterStatus::kErrorRateUnderflow:
      return BloomStatus::kErrorRateUnderflow;
    case FilterStatus::kInvalidOptions:
    case FilterStatus::kMaxExpansions:
    case FilterStatus::kCopiesFull:
      break;
  }
  return BloomStatus::kProblemInserting;
}

BloomStatus BloomLookupStatus(Lookup lookup, BloomStatus missing) {
  switch (lookup) {
    case Lookup::kFound: return BloomStatus::kOk;
    case Lookup::kWrongType: return BloomStatus::kWrongType;
    case Lookup::kOutOfMemory: return BloomStatus::kSnapshotCopyOom;
    case Lookup::kMissing: break;
  }
  return missing;
}

ScalableBloomOptions BloomOptionsOf(const BloomParams& params) {
  ScalableBloomOptions options;
  options.error_rate = params.error_rate;
  options.capacity = params.capacity;
  options.expansion = params.expansion;
  options.hash_seed = params.seed;
  options.tightening = params.tightening;
  options.layout = PreferredBloomLayout(params.error_rate, params.expansion, params.tightening);
  return options;
}

BloomStatus CheckScaleTo(const BloomParams& params, const FilterLimits& limits, uint64_t target) {
  switch (ScalableBloomFilter::ProjectGrowth(BloomOptionsOf(params), limits, target).stop) {
    case FilterStatus::kOk: return BloomStatus::kOk;
    case FilterStatus::kErrorRateUnderflow: return BloomStatus::kScaleToErrorUnderflow;
    case FilterStatus::kTooManyLayers: return BloomStatus::kScaleToTooManyLayers;
    case FilterStatus::kFull: return BloomStatus::kScaleToNonScaling;
    default: break;  // the memory cap, or a shape too large to exist
  }
  return BloomStatus::kScaleToOverMemory;
}

uint64_t BloomBytesEstimate(const BloomParams& params) {
  const double bits_per_item =
      1.44 * std::log2(1 / std::clamp(params.error_rate, kMinBloomErrorRate, kMaxBloomErrorRate));
  const double bytes = static_cast<double>(params.capacity) * bits_per_item / 8;
  return bytes >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

BloomStatus CreateBloom(FilterStore& store, const KeyRef& key, const BloomParams& params,
                        bool fail_if_exists, EntryPtr* entry) {
  entry->reset();
  if (params.error_rate < kMinBloomErrorRate) return BloomStatus::kErrorRateFloor;
  if (params.window_ms != 0) return CreateWindowedBloom(store, key, params, fail_if_exists, entry);
  const ScalableBloomOptions options = BloomOptionsOf(params);
  std::unique_ptr<ScalableBloomFilter> filter;
  if (FilterStatus s =
          ScalableBloomFilter::Create(options, store.limits, store.budget, &filter, &store.refusal);
      s != FilterStatus::kOk) {
    return BloomCreateStatus(s, store.refusal);
  }
  return BloomStatusOf(StoreNewFilter(store, key, std::move(filter), fail_if_exists, entry));
}

BloomStatus ReserveBloom(FilterStore& store, const KeyRef& key, const BloomParams& params) {
  switch (ReserveConflict<ScalableBloomFilter>(store, key)) {
    case Lookup::kFound: return BloomStatus::kItemExists;
    case Lookup::kWrongType: return BloomStatus::kWrongType;
    case Lookup::kOutOfMemory: return BloomStatus::kSnapshotCopyOom;
    case Lookup::kMissing: break;
  }
  EntryPtr entry;
  return CreateBloom(store, key, params, /*fail_if_exists=*/true, &entry);
}

BloomStatus FindOrCreateBloom(FilterStore& store, const KeyRef& key, const CreateRule& rule,
                              EntryPtr* entry) {
  const Lookup lookup = FindFilter<ScalableBloomFilter>(store, key, entry);
  if (lookup != Lookup::kMissing || !rule.create) {
    return BloomLookupStatus(lookup, /*missing=*/BloomStatus::kNotFound);
  }
  return CreateBloom(store, key, rule.Resolve(store.config), /*fail_if_exists=*/false, entry);
}

BloomAddResult AddBloomItems(KeyEntry& entry, std::span<const std::string_view> items) {
  BloomAddResult result;
  result.added.reserve(items.size());
  ScalableBloomFilter& filter = *entry.bloom();
  bool changed = false;
  // In chunks of kBloomBatchItems: every item of a chunk hashed first, then
  // the filter's AddBatch (prefetch every line, then one probe pass each).
  KeyHash hashes[kBloomBatchItems];
  bool added[kBloomBatchItems];
  for (size_t start = 0; start < items.size(); start += kBloomBatchItems) {
    const size_t count = std::min(kBloomBatchItems, items.size() - start);
    for (size_t i = 0; i < count; ++i) hashes[i] = filter.Hash(items[start + i]);
    size_t done = 0;
    const FilterStatus status = filter.AddBatch({hashes, count}, added, &done, &result.refusal);
    for (size_t i = 0; i < done; ++i) {
      result.added.push_back(added[i]);
      changed |= added[i];
    }
    if (status != FilterStatus::kOk) {
      result.status = BloomAddStatus(status);
      break;
    }
  }
  if (changed) {
    entry.MarkModified();
  } else if (!result.added.empty()) {
    entry.MarkTouched();  // every item was present: WATCH still sees the write
  }
  return result;
}

void MayContainBloomChunk(const ScalableBloomFilter& filter,
                          std::span<const std::string_view> items, bool* found) {
  KeyHash hashes[kBloomBatchItems];
  const size_t count = std::min(kBloomBatchItems, items.size());
  for (size_t i = 0; i < count; ++i) hashes[i] = filter.Hash(items[i]);
  filter.MayContainBatch({hashes, count}, found);
}

void BloomAddedEffect(std::string_view key, std::span<const std::string_view> items,
                      const std::vector<bool>& added, std::string* counted,
                      std::vector<std::string_view>* effect) {
  effect->clear();
  const size_t applied = added.size();
  if (applied == 0) return;
  counted->clear();
  counted->reserve(applied);
  for (bool was_new : added) counted->push_back(was_new ? '1' : '0');
  effect->reserve(3 + applied);
  effect->assign({kBloomAddedEffect, key, *counted});
  effect->insert(effect->end(), items.begin(), items.begin() + static_cast<ptrdiff_t>(applied));
}

}  // namespace bloomgate
