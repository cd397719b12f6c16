// CBF.*'s ops: creating, finding, adding to and deleting from counting
// Bloom filters, as values (no client, no reply). The family follows BF.*:
// same statuses, mapped to the same texts by BloomStatusText (bloom_ops.h).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "server/commands/bloom/bloom_ops.h"

namespace bloomgate {

// CBF.RESERVE: refuses a taken key before anything is allocated, then
// creates the filter (params.counter_bits included) and journals it.
BloomStatus ReserveCounting(FilterStore& store, const KeyRef& key, const BloomParams& params);

// Creates and stores a filter (see CreateBloom).
BloomStatus CreateCounting(FilterStore& store, const KeyRef& key, const BloomParams& params,
                           bool fail_if_exists, EntryPtr* entry);

// The filter under `key`, created by `rule` when missing and rule.create;
// NOCREATE on a missing key is kNotFound.
BloomStatus FindOrCreateCounting(FilterStore& store, const KeyRef& key, const CreateRule& rule,
                                 EntryPtr* entry);

// Adds items in order, stopping at the first failure; `added` says per item
// that went in whether it was new to the filter. Every add increments
// counters, so the entry is marked modified if any went in. The caller
// holds `key` exclusively (every CBF.* write does): the batch add then
// writes counter words with plain stores, not compare-and-swap
// (CounterWrites::kExclusive), which a concurrent writer would break.
BloomAddResult AddCountingItems(KeyEntry& entry, std::span<const std::string_view> items);

// Deletes one occurrence of each item: per item, whether it was there to
// delete. The entry is marked modified if any was.
struct CountingIncrResult {
  BloomStatus status = BloomStatus::kOk;  // why the adds stopped early, if they did
  MemoryRefusal refusal;                  // ... and for a memory status, its figures
  std::vector<uint64_t> counts;           // per item that went in: CBF.COUNT after its add
};

// CBF.INCR: adds each item once, in order, and reads its count right after
// (including this add), stopping at the first failed add.
CountingIncrResult IncrCountingItems(KeyEntry& entry, std::span<const std::string_view> items);

std::vector<bool> DeleteCountingItems(KeyEntry& entry, std::span<const std::string_view> items);

}  // namespace bloomgate
