// CF.*'s ops: creating, finding, adding to, deleting from and compacting
// cuckoo filters, as values (no client, no reply). cuckoo_commands.cc
// parses, calls them, maps a CuckooStatus to RedisBloom's text with
// CuckooStatusText and replies.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "filters/cuckoo_filter.h"
#include "filters/filter_status.h"
#include "server/commands/family_shared/filter_lookup.h"

namespace bloomgate {

enum class CuckooStatus : uint8_t {
  kOk,
  kNotFound,              // no filter where one is needed (NOCREATE, INFO)
  kWrongType,
  kItemExists,            // RESERVE of a key that holds a filter
  kInsertCapacityRange,   // an auto-created filter's capacity < 2 x bucket size
  kCreateOverFilterMemory,  // creation refused: the filter would pass max-filter-memory
  kCreateOverMaxmemory,     // creation refused: maxmemory has not room for it
  kCreateFailed,          // creation failed otherwise (the allocation itself)
  kCouldNotCreate,        // creation refused its options (a server bug: they were validated)
  kFull,                  // a non-scaling filter has no room for the item
  kMaxExpansions,         // the filter needs a sub-filter beyond cf-max-expansions
  kOutOfMemory,           // growth refused by maxmemory (or the allocator)
  kGrowOverFilterMemory,  // growth refused: a sub-filter would pass max-filter-memory
  kNothingToDelete,       // CF.DEL on a missing key
  kNothingToCompact,      // CF.COMPACT on a missing key
  kSnapshotCopyOom,       // a write's snapshot copy of the filter does not fit maxmemory
  kCopiesFull,            // the item's copies fill both its buckets (CuckooFilter kCopiesFull)
};

// A short name for test messages and logs; not a client-visible text.
std::string_view ToString(CuckooStatus status);

// The one place a CuckooStatus becomes a client-visible text (errors.h,
// RedisBloom's wording). kOk has none.
std::string_view CuckooStatusText(CuckooStatus status);
// CuckooStatusText plus, for a memory status, which limit and the figures
// (errors::MemoryRefused).
std::string CuckooFailureText(CuckooStatus status, const MemoryRefusal& refusal);
// A failed creation's status, from the filter's status and its refusal.
CuckooStatus CuckooCreateStatus(FilterStatus status, const MemoryRefusal& refusal);

// How a failed add is told.
CuckooStatus CuckooAddStatus(FilterStatus status);

// kOk for a found filter, kWrongType, and `missing` for a missing key.
CuckooStatus CuckooLookupStatus(Lookup lookup, CuckooStatus missing);

// cf-initial-size, cf-bucket-size, cf-max-iterations, cf-expansion-factor,
// cf-max-expansions.
CuckooFilterOptions DefaultCuckooOptions(const RuntimeConfig& config);

// CF.RESERVE: refuses a taken key before anything is allocated, then
// creates the filter and journals it.
CuckooStatus ReserveCuckoo(FilterStore& store, const KeyRef& key,
                           const CuckooFilterOptions& options);

// Creates and stores a filter (see CreateBloom in bloom_ops.h).
CuckooStatus CreateCuckoo(FilterStore& store, const KeyRef& key,
                          const CuckooFilterOptions& options, bool fail_if_exists,
                          EntryPtr* entry);

// The filter under `key`, created with the defaults (and `capacity` when
// given) when missing and `create`; a missing key without `create` is
// kNotFound.
CuckooStatus FindOrCreateCuckoo(FilterStore& store, const KeyRef& key, bool create,
                                std::optional<uint64_t> capacity, EntryPtr* entry);

// CF.ADD (always a new fingerprint) or CF.ADDNX (only if the item tests
// absent): *added says whether one went in. `admission`: the store's
// (a replay applies copies an older build took, filters/admission.h). A
// growth refused for memory is described in *refusal (may be null).
CuckooStatus AddCuckooItem(KeyEntry& entry, std::string_view item, bool only_if_absent,
                           Admission admission, bool* added, MemoryRefusal* refusal = nullptr);

// Per item of CF.INSERT / CF.INSERTNX: added, already there (NX), no room.
enum class CuckooInsert : int8_t { kAdded = 1, kPresent = 0, kNoRoom = -1 };

struct CuckooInsertResult {
  CuckooStatus status = CuckooStatus::kOk;  // kOutOfMemory stops the inserts
  MemoryRefusal refusal;                    // ... and for a memory status, its figures
  std::vector<CuckooInsert> results;        // per item tried, in order
};

// Inserts items in order; a full filter is a per-item kNoRoom, running out
// of memory stops there.
CuckooInsertResult InsertCuckooItems(KeyEntry& entry, std::span<const std::string_view> items,
                                     bool only_if_absent, Admission admission);

// Deletes one fingerprint of `item`; whether there was one.
bool DeleteCuckooItem(KeyEntry& entry, std::string_view item);

// Moves fingerprints into newer sub-filters and frees the emptied ones.
void CompactCuckoo(KeyEntry& entry);

}  // namespace bloomgate
