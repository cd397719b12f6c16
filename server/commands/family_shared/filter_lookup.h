// Finding and storing filters of one type under a key: the first and last
// step of every family op, with the keyspace statistics, the snapshot's
// copy-on-write and the journaling of creations in one place. Outcomes are
// values (Lookup, StoreOutcome); each family turns them into its statuses
// and its statuses into RedisBloom's texts once (<family>_ops.h).
#pragma once

#include <cstdint>
#include <memory>

#include "config/runtime_config.h"
#include "filters/admission.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "filters/memory_refusal.h"
#include "server/durability/journal.h"
#include "server/keyspace/key_ref.h"
#include "server/keyspace/keyspace.h"
#include "server/stats/server_stats.h"

namespace bloomgate {

struct CommandContext;
class ServerContext;

// What a family op may reach: the keyspace, what a creation needs (limits,
// budget, the defaults in the config, the journal and the caller's journal
// session) — and nothing of a client's reply. Handlers build one with
// StoreFor; unit tests build one from a ServerContext with StoreOf.
struct FilterStore {
  Keyspace& keyspace;
  const RuntimeConfig& config;  // defaults, read only when a filter is created
  FilterLimits limits;
  MemoryBudget* budget;
  Journal& journal;
  JournalSession& session;
  int64_t now_ms = 0;
  // The window clock (base/clock.h) that windowed filters age by.
  int64_t window_now_ms = 0;
  // A write takes the snapshot's copy of a filter before changing it
  // (KeyEntry::TakeSnapshotCopy).
  bool write = false;
  WorkerCounters* counters = nullptr;  // keyspace hits / misses; may be null
  // kAsRecorded for an origin not judged by limits (OriginPolicy): client-only rules
  // do not judge it again (filters/admission.h).
  Admission admission = Admission::kClient;
  // Filled by an op whose creation the memory limits refused: which limit
  // and the figures, for the handler's text (errors::MemoryRefused).
  MemoryRefusal refusal;
};

// The store of a running command: its server, client session, time, and
// whether its row is a write.
FilterStore StoreFor(CommandContext& ctx);
// A store outside any command (tests): `write` as a write command would,
// at the window clock read now.
FilterStore StoreOf(ServerContext& server, JournalSession& session, int64_t now_ms, bool write);
// The same at a given window clock.
FilterStore StoreAt(ServerContext& server, JournalSession& session, int64_t now_ms,
                    int64_t window_now_ms, bool write);

enum class Lookup : uint8_t {
  kFound,
  kMissing,    // no live key
  kWrongType,  // the key holds a filter of another family
  // A write found the filter, but the copy a snapshot is owed of it before
  // it changes does not fit maxmemory (-OOM; nothing changed).
  kOutOfMemory,
};

// Whether `entry` holds a filter that `Filter`'s commands serve: the filter
// itself, or for ScalableBloomFilter also a WindowedBloomFilter (BF.* serves
// both; the handlers tell them apart), and for CountingBloomFilter also a
// WindowedCountingBloomFilter (CBF.*).
template <typename Filter>
bool HoldsServed(const KeyEntry& entry) {
  return entry.template get<Filter>() != nullptr;
}
template <>
inline bool HoldsServed<ScalableBloomFilter>(const KeyEntry& entry) {
  return entry.get<ScalableBloomFilter>() != nullptr ||
         entry.get<WindowedBloomFilter>() != nullptr;
}
template <>
inline bool HoldsServed<WindowedBloomFilter>(const KeyEntry& entry) {
  return HoldsServed<ScalableBloomFilter>(entry);
}
// CBF.* serves windowed counting filters the same way.
template <>
inline bool HoldsServed<CountingBloomFilter>(const KeyEntry& entry) {
  return entry.get<CountingBloomFilter>() != nullptr ||
         entry.get<WindowedCountingBloomFilter>() != nullptr;
}
template <>
inline bool HoldsServed<WindowedCountingBloomFilter>(const KeyEntry& entry) {
  return HoldsServed<CountingBloomFilter>(entry);
}

// The entry under `key` into *entry if it holds a `Filter` (else *entry is
// null).
template <typename Filter>
Lookup FindFilter(FilterStore& store, const KeyRef& key, EntryPtr* entry) {
  *entry = store.keyspace.Find(key, store.now_ms);
  if (*entry == nullptr) {
    if (store.counters != nullptr) Bump(store.counters->keyspace_misses);
    return Lookup::kMissing;
  }
  if (store.counters != nullptr) Bump(store.counters->keyspace_hits);
  if (!HoldsServed<Filter>(**entry)) {
    entry->reset();
    return Lookup::kWrongType;
  }
  // A snapshot may still owe itself a copy of this filter as it was at its
  // cut; a write makes that copy first (for Bloom filters, armed only by a
  // big COPY, server/commands/keys/key_copy_commands.cc), and waits for a read
  // off the loop (a merge building its new dest: KeyEntry::BeginOffLoopRead). A big one was usually made already by the
  // snapshot copier while the writer was parked (command_dispatcher.cc);
  // this is the path for small ones and for a cut that came in between. A
  // copy that does not fit maxmemory refuses the write, which changes nothing.
  const bool owed = store.write && (*entry)->snapshot_copy_owed();
  if (store.write && !(*entry)->TakeSnapshotCopy(store.budget, /*final_attempt=*/false)) {
    entry->reset();
    return Lookup::kOutOfMemory;
  }
  // A writer that waited for a read off the loop finds the key again: a
  // MIGRATE removes its source before it lets the writers go, and a write
  // to the removed entry would be acknowledged and lost.
  if (owed && store.keyspace.Peek(key, store.now_ms) != *entry) {
    return FindFilter<Filter>(store, key, entry);
  }
  return Lookup::kFound;
}

// For families whose handlers reply directly (CMS.*, TOPK.*): true when
// `lookup` found the filter; otherwise fails the command with `missing_text`
// (the family's own text for a missing key), WRONGTYPE or Redis's OOM.
bool FoundOrFail(CommandContext& ctx, Lookup lookup, std::string_view missing_text);

// Why a RESERVE of a `Filter` cannot use `key`, checked before anything is
// allocated: kMissing when the key is free, kFound when it holds a `Filter`
// ("item exists"), kWrongType otherwise. Counts no hit or miss.
template <typename Filter>
Lookup ReserveConflict(FilterStore& store, const KeyRef& key) {
  EntryPtr entry = store.keyspace.Find(key, store.now_ms);
  if (entry == nullptr) return Lookup::kMissing;
  return HoldsServed<Filter>(*entry) ? Lookup::kFound : Lookup::kWrongType;
}

enum class StoreOutcome : uint8_t {
  kStored,      // the new filter is under the key
  kExisting,    // a live `Filter` appeared meanwhile and is under the key
  kItemExists,  // ... and `fail_if_exists` refused it
  kWrongType,   // a key of another family appeared meanwhile
};

// Stores a newly created filter under `key` unless a live key appeared
// meanwhile; *entry is the entry now under the key for kStored and
// kExisting, else null. A filter that is not stored is freed here. The
// creation is journaled with the filter's exact parameters, so a replay
// never depends on the defaults in force when it runs.
template <typename Filter>
StoreOutcome StoreNewFilter(FilterStore& store, const KeyRef& key,
                            std::unique_ptr<Filter> filter, bool fail_if_exists,
                            EntryPtr* entry) {
  bool inserted = false;
  *entry = store.keyspace.Insert(
      key, std::make_shared<KeyEntry>(std::move(filter)), store.now_ms, &inserted,
      [&store](const std::string& name, const KeyEntry& created) {
        store.journal.RecordFilter(store.session, store.now_ms, name, created.filter(),
                                   /*with_payload=*/false);
      });
  if (inserted) return StoreOutcome::kStored;
  if (!HoldsServed<Filter>(**entry)) {
    entry->reset();
    return StoreOutcome::kWrongType;
  }
  if (fail_if_exists) {
    entry->reset();
    return StoreOutcome::kItemExists;
  }
  return StoreOutcome::kExisting;
}

}  // namespace bloomgate
