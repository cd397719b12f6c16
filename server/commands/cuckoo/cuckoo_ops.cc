#include "server/commands/cuckoo/cuckoo_ops.h"

#include <memory>
#include <utility>

#include "filters/key_hash.h"
#include "filters/limits.h"
#include "server/commands/errors.h"

namespace bloomgate {

std::string_view ToString(CuckooStatus status) {
  switch (status) {
    case CuckooStatus::kOk: return "ok";
    case CuckooStatus::kNotFound: return "not found";
    case CuckooStatus::kWrongType: return "wrong type";
    case CuckooStatus::kItemExists: return "item exists";
    case CuckooStatus::kInsertCapacityRange: return "insert capacity out of range";
    case CuckooStatus::kCreateOverFilterMemory: return "create over max-filter-memory";
    case CuckooStatus::kCreateOverMaxmemory: return "create over maxmemory";
    case CuckooStatus::kCreateFailed: return "create failed";
    case CuckooStatus::kGrowOverFilterMemory: return "growth over max-filter-memory";
    case CuckooStatus::kCouldNotCreate: return "could not create";
    case CuckooStatus::kFull: return "full";
    case CuckooStatus::kMaxExpansions: return "max expansions";
    case CuckooStatus::kOutOfMemory: return "out of memory";
    case CuckooStatus::kSnapshotCopyOom: return "snapshot copy out of memory";
    case CuckooStatus::kNothingToDelete: return "nothing to delete";
    case CuckooStatus::kNothingToCompact: return "nothing to compact";
    case CuckooStatus::kCopiesFull: return "copies fill both buckets";
  }
  return "unknown";
}

std::string_view CuckooStatusText(CuckooStatus status) {
  switch (status) {
    case CuckooStatus::kOk: return {};
    case CuckooStatus::kNotFound: return errors::kNotFound;
    case CuckooStatus::kWrongType: return errors::kWrongType;
    case CuckooStatus::kItemExists: return errors::kItemExists;
    case CuckooStatus::kInsertCapacityRange: return errors::kCfInsertCapacityRange;
    case CuckooStatus::kCreateOverFilterMemory:
    case CuckooStatus::kCreateOverMaxmemory:
    case CuckooStatus::kCreateFailed: return errors::kInsufficientMemory;
    case CuckooStatus::kGrowOverFilterMemory: return errors::kCfInsufficientMemory;
    case CuckooStatus::kCouldNotCreate: return errors::kCouldNotCreateFilter;
    case CuckooStatus::kFull: return errors::kCfFull;
    case CuckooStatus::kMaxExpansions: return errors::kCfMaxExpansions;
    case CuckooStatus::kOutOfMemory: return errors::kCfInsufficientMemory;
    case CuckooStatus::kNothingToDelete: return errors::kCfDelNotFound;
    case CuckooStatus::kNothingToCompact: return errors::kCfCompactNotFound;
    case CuckooStatus::kSnapshotCopyOom: return errors::kOom;
    case CuckooStatus::kCopiesFull: return errors::kCfCopiesFull;
  }
  return errors::kCfInsufficientMemory;
}

std::string CuckooFailureText(CuckooStatus status, const MemoryRefusal& refusal) {
  switch (status) {
    case CuckooStatus::kCreateOverFilterMemory:
    case CuckooStatus::kCreateOverMaxmemory:
    case CuckooStatus::kCreateFailed:
      return errors::MemoryRefused(CuckooStatusText(status), refusal, /*growth=*/false);
    case CuckooStatus::kOutOfMemory:
    case CuckooStatus::kGrowOverFilterMemory:
      return errors::MemoryRefused(CuckooStatusText(status), refusal, /*growth=*/true);
    default: break;
  }
  return std::string(CuckooStatusText(status));
}

CuckooStatus CuckooCreateStatus(FilterStatus status, const MemoryRefusal& refusal) {
  if (status == FilterStatus::kInvalidOptions) return CuckooStatus::kCouldNotCreate;
  if (status == FilterStatus::kFilterMemoryLimit) return CuckooStatus::kCreateOverFilterMemory;
  if (refusal.limit == MemoryRefusal::Limit::kBudget) return CuckooStatus::kCreateOverMaxmemory;
  return CuckooStatus::kCreateFailed;
}

CuckooStatus CuckooAddStatus(FilterStatus status) {
  switch (status) {
    case FilterStatus::kOk: return CuckooStatus::kOk;
    case FilterStatus::kFull: return CuckooStatus::kFull;
    case FilterStatus::kMaxExpansions: return CuckooStatus::kMaxExpansions;
    case FilterStatus::kCopiesFull: return CuckooStatus::kCopiesFull;
    case FilterStatus::kFilterMemoryLimit: return CuckooStatus::kGrowOverFilterMemory;
    case FilterStatus::kOutOfMemory:
    case FilterStatus::kTooManyLayers:
    case FilterStatus::kInvalidOptions:
    case FilterStatus::kErrorRateUnderflow:  // not a cuckoo status
      break;
  }
  return CuckooStatus::kOutOfMemory;
}

CuckooStatus CuckooLookupStatus(Lookup lookup, CuckooStatus missing) {
  switch (lookup) {
    case Lookup::kFound: return CuckooStatus::kOk;
    case Lookup::kWrongType: return CuckooStatus::kWrongType;
    case Lookup::kOutOfMemory: return CuckooStatus::kSnapshotCopyOom;
    case Lookup::kMissing: break;
  }
  return missing;
}

CuckooFilterOptions DefaultCuckooOptions(const RuntimeConfig& runtime) {
  ServerConfig config = runtime.Get();
  CuckooFilterOptions options;
  options.capacity = config.cf_initial_size;
  options.bucket_size = config.cf_bucket_size;
  options.max_iterations = config.cf_max_iterations;
  options.expansion = config.cf_expansion_factor;
  options.max_expansions = config.cf_max_expansions;
  return options;
}

CuckooStatus ReserveCuckoo(FilterStore& store, const KeyRef& key,
                           const CuckooFilterOptions& options) {
  switch (ReserveConflict<CuckooFilter>(store, key)) {
    case Lookup::kFound: return CuckooStatus::kItemExists;
    case Lookup::kWrongType: return CuckooStatus::kWrongType;
    case Lookup::kOutOfMemory: return CuckooStatus::kSnapshotCopyOom;
    case Lookup::kMissing: break;
  }
  EntryPtr entry;
  return CreateCuckoo(store, key, options, /*fail_if_exists=*/true, &entry);
}

CuckooStatus CreateCuckoo(FilterStore& store, const KeyRef& key,
                          const CuckooFilterOptions& options, bool fail_if_exists,
                          EntryPtr* entry) {
  entry->reset();
  std::unique_ptr<CuckooFilter> filter;
  const FilterStatus status =
      CuckooFilter::Create(options, store.limits, store.budget, &filter, &store.refusal);
  if (status != FilterStatus::kOk) {
    // Options were validated with RedisBloom's texts before: what is left
    // is memory (or a bug, which must still not crash the server).
    return CuckooCreateStatus(status, store.refusal);
  }
  switch (StoreNewFilter(store, key, std::move(filter), fail_if_exists, entry)) {
    case StoreOutcome::kStored:
    case StoreOutcome::kExisting: return CuckooStatus::kOk;
    case StoreOutcome::kItemExists: return CuckooStatus::kItemExists;
    case StoreOutcome::kWrongType: break;
  }
  return CuckooStatus::kWrongType;
}

CuckooStatus FindOrCreateCuckoo(FilterStore& store, const KeyRef& key, bool create,
                                std::optional<uint64_t> capacity, EntryPtr* entry) {
  const Lookup lookup = FindFilter<CuckooFilter>(store, key, entry);
  if (lookup != Lookup::kMissing || !create) {
    return CuckooLookupStatus(lookup, /*missing=*/CuckooStatus::kNotFound);
  }
  CuckooFilterOptions options = DefaultCuckooOptions(store.config);
  if (capacity) options.capacity = *capacity;
  if (options.capacity < 2ull * options.bucket_size) return CuckooStatus::kInsertCapacityRange;
  return CreateCuckoo(store, key, options, /*fail_if_exists=*/false, entry);
}

CuckooStatus AddCuckooItem(KeyEntry& entry, std::string_view item, bool only_if_absent,
                           Admission admission, bool* added, MemoryRefusal* refusal) {
  CuckooFilter& filter = *entry.get<CuckooFilter>();
  *added = true;
  const KeyHash hash = filter.Hash(item);
  uint64_t kicks_left = CommandKickBudget(1);  // filters/limits.h
  const FilterStatus status = only_if_absent
                                  ? filter.AddIfAbsent(hash, added, &kicks_left, admission, refusal)
                                  : filter.Add(hash, &kicks_left, admission, refusal);
  if (status != FilterStatus::kOk) {
    *added = false;
    return CuckooAddStatus(status);
  }
  if (*added) {
    entry.MarkModified();
  } else {
    entry.MarkTouched();  // CF.ADDNX of a present item: WATCH still sees the write
  }
  return CuckooStatus::kOk;
}

CuckooInsertResult InsertCuckooItems(KeyEntry& entry, std::span<const std::string_view> items,
                                     bool only_if_absent, Admission admission) {
  CuckooFilter& filter = *entry.get<CuckooFilter>();
  CuckooInsertResult result;
  result.results.reserve(items.size());
  // One budget for the whole command (filters/limits.h), accrued per item
  // tried so that a prefix of the command spends exactly what it spent here.
  uint64_t kicks_left = kCommandKickAllowance;
  for (std::string_view item : items) {
    bool added = true;
    kicks_left += kKicksPerItem;
    const KeyHash hash = filter.Hash(item);
    const CuckooStatus status =
        CuckooAddStatus(only_if_absent ? filter.AddIfAbsent(hash, &added, &kicks_left, admission,
                                                            &result.refusal)
                                       : filter.Add(hash, &kicks_left, admission, &result.refusal));
    if (status == CuckooStatus::kFull || status == CuckooStatus::kMaxExpansions) {
      result.results.push_back(CuckooInsert::kNoRoom);
    } else if (status != CuckooStatus::kOk) {
      result.status = status;  // out of memory: stop here
      break;
    } else {
      result.results.push_back(added ? CuckooInsert::kAdded : CuckooInsert::kPresent);
    }
  }
  entry.MarkModified();
  return result;
}

bool DeleteCuckooItem(KeyEntry& entry, std::string_view item) {
  const bool removed = entry.get<CuckooFilter>()->Remove(entry.get<CuckooFilter>()->Hash(item));
  if (removed) {
    entry.MarkModified();
  } else {
    entry.MarkTouched();  // nothing to delete: WATCH still sees the write
  }
  return removed;
}

void CompactCuckoo(KeyEntry& entry) {
  entry.get<CuckooFilter>()->Compact();
  entry.MarkModified();
}

}  // namespace bloomgate
