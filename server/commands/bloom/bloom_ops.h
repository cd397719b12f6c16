// BF.*'s ops: creating, finding and adding to scalable Bloom filters, as
// values. They know no client and write no reply: they take the store
// (filter_lookup.h), the key and the items, and return a BloomStatus and
// what they did; bloom_commands.cc parses, calls them, maps the status to
// RedisBloom's text with BloomStatusText and replies. CBF.* follows BF.* and
// shares these statuses and texts (counting_bloom_ops.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filters/filter_status.h"
#include "filters/scalable_bloom_filter.h"
#include "server/commands/bloom/bloom_options.h"
#include "server/commands/family_shared/filter_lookup.h"

namespace bloomgate {

enum class BloomStatus : uint8_t {
  kOk,
  kNotFound,            // no filter under the key where one is needed (NOCREATE, INFO)
  kWrongType,           // the key holds another family
  kItemExists,          // RESERVE of a key that holds a filter
  kCreateOverFilterMemory,  // creation refused: the filter would pass max-filter-memory
  kCreateOverMaxmemory,     // creation refused: maxmemory has not room for it
  kCreateFailed,        // creation failed otherwise (the allocation itself)
  kNonScalingFull,      // a non-scaling filter is at capacity and the item is new
  kOutOfMemory,         // maxmemory (or the allocator) refused a new layer
  kGrowOverFilterMemory,  // a new layer would pass max-filter-memory
  kProblemInserting,    // any other failed scale-out
  kSnapshotCopyOom,     // a write's snapshot copy of the filter does not fit maxmemory
  kMergeMismatch,       // BF.MERGE / CBF.MERGE inputs differ (or one is windowed)
  kTooManyLayers,       // scale-out refused: the filter has kMaxBloomLayers layers
  kErrorRateFloor,      // creation of a filter below kMinBloomErrorRate
  kMergeUnsupported,    // a merge input of a kind the merge does not take
  kTooLargeToLog,       // a result journaled whole could pass one log record's limit
  kErrorRateUnderflow,  // scale-out refused: the next layer's rate would reach 0
  // VALIDATESCALETO refused (valkey-bloom's texts): growth to the count would
  // pass max-filter-memory, reach a rate of 0, or need more than 64 layers.
  kScaleToOverMemory,
  kScaleToErrorUnderflow,
  kScaleToTooManyLayers,
  kScaleToNonScaling,  // VALIDATESCALETO of a non-scaling filter (bf-expansion-factor 0)
};

// What storing a newly created Bloom-like filter (StoreNewFilter) means for
// the command: kOk (stored, or a live filter of the family was already
// there), kItemExists or kWrongType.
inline BloomStatus BloomStatusOf(StoreOutcome outcome) {
  switch (outcome) {
    case StoreOutcome::kStored:
    case StoreOutcome::kExisting: return BloomStatus::kOk;
    case StoreOutcome::kItemExists: return BloomStatus::kItemExists;
    case StoreOutcome::kWrongType: break;
  }
  return BloomStatus::kWrongType;
}

// A short name for test messages and logs; not a client-visible text.
std::string_view ToString(BloomStatus status);

// The one place a BloomStatus becomes a client-visible text (errors.h,
// RedisBloom's wording). kOk has none.
std::string_view BloomStatusText(BloomStatus status);
// The text for a failed status with what the memory check said
// (errors::MemoryRefused): BloomStatusText plus the limit and figures for a
// memory status, BloomStatusText alone for any other.
std::string BloomFailureText(BloomStatus status, const MemoryRefusal& refusal);
// A failed creation's status, from the filter's status and its refusal.
BloomStatus BloomCreateStatus(FilterStatus status, const MemoryRefusal& refusal);

// How a failed add to a Bloom or counting Bloom layer chain is told.
BloomStatus BloomAddStatus(FilterStatus status);

// The lookup's outcome as a status: kOk for a found filter, kWrongType,
// and `missing` for a missing key.
BloomStatus BloomLookupStatus(Lookup lookup, BloomStatus missing);

// Creates a filter of `params` and stores it under `key` (journaling the
// creation): *entry is the filter under the key on kOk — with
// `fail_if_exists` false, one another client stored meanwhile.
BloomStatus CreateBloom(FilterStore& store, const KeyRef& key, const BloomParams& params,
                        bool fail_if_exists, EntryPtr* entry);

// BF.RESERVE: refuses a taken key (kItemExists, or kWrongType) before
// anything is allocated, then creates the filter.
BloomStatus ReserveBloom(FilterStore& store, const KeyRef& key, const BloomParams& params);

// CreateBloom's build half for a scalable (not windowed) filter: the
// options it builds with, and about how many bytes their first layer takes
// (1.44 x log2(1/p) bits per item), which decides whether BF.RESERVE builds
// it off the event loop (CommandContext::MakeFilter).
ScalableBloomOptions BloomOptionsOf(const BloomParams& params);
uint64_t BloomBytesEstimate(const BloomParams& params);

// VALIDATESCALETO: kOk when a filter of `params` could grow to hold
// `target` items under `limits`, else the kScaleTo* status that stops it.
BloomStatus CheckScaleTo(const BloomParams& params, const FilterLimits& limits, uint64_t target);

// The filter under `key`, created by `rule` (with the config's defaults)
// when the key is missing and rule.create; NOCREATE on a missing key is
// kNotFound.
BloomStatus FindOrCreateBloom(FilterStore& store, const KeyRef& key, const CreateRule& rule,
                              EntryPtr* entry);

struct BloomAddResult {
  BloomStatus status = BloomStatus::kOk;  // why the adds stopped early, if they did
  MemoryRefusal refusal;                  // ... and for a memory status, its figures
  std::vector<bool> added;                // per item that went in, in order: new to the filter?
};

// Items per batch handed to the filter at once (hash all, prefetch all
// lines, then probe: ScalableBloomFilter::AddBatch / MayContainBatch); 128
// hashes and answers on the stack, 2.2 KB.
inline constexpr size_t kBloomBatchItems = 128;

// BF.MEXISTS's lookups for up to kBloomBatchItems items (the rest are
// ignored): found[i] for items[i], the filter's answers as one lookup each.
void MayContainBloomChunk(const ScalableBloomFilter& filter,
                          std::span<const std::string_view> items, bool* found);

// Adds items in order, stopping at the first failure. The entry is marked
// modified (WATCH) only if the filter changed: an item it already holds
// changes nothing.
BloomAddResult AddBloomItems(KeyEntry& entry, std::span<const std::string_view> items);

// What the journal records for those adds (server/durability/journal.h):
// kBloomAddedEffect, the key, one '1'/'0' per item that went in (counted or
// not), then those items — the adds as they took effect, so replay never
// judges capacity or limits again. *counted is the storage `effect` points
// into. Nothing (an empty *effect) when no item went in.
void BloomAddedEffect(std::string_view key, std::span<const std::string_view> items,
                      const std::vector<bool>& added, std::string* counted,
                      std::vector<std::string_view>* effect);

}  // namespace bloomgate
