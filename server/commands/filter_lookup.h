// Finding and storing filters of one type under a key: the first and last
// step of every filter command, with the keyspace statistics and the
// WRONGTYPE / "item exists" rules in one place.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "server/commands/command_context.h"
#include "server/commands/errors.h"

namespace bloomgate {

// The entry under `key` if it holds a `Filter`. A missing key gives null
// with *error unset; a key of another type gives null and WRONGTYPE.
template <typename Filter>
EntryPtr FindFilter(CommandContext& ctx, std::string_view key,
                    std::optional<std::string_view>* error) {
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(key), ctx.now_ms);
  if (entry == nullptr) {
    Bump(ctx.counters().keyspace_misses);
    return nullptr;
  }
  Bump(ctx.counters().keyspace_hits);
  if (entry->get<Filter>() == nullptr) {
    *error = errors::kWrongType;
    return nullptr;
  }
  // A snapshot may still owe itself a copy of this filter as it was at its
  // cut; a write makes that copy first (nothing to do for Bloom filters,
  // which are never armed). A big one was usually made already by the
  // snapshot copier while the writer was parked (command_dispatcher.cc);
  // this is the path for small ones and for a cut that came in between. A
  // copy that does not fit maxmemory refuses the write, which changes nothing.
  if ((ctx.spec.flags & kCmdWrite) != 0 &&
      !entry->TakeSnapshotCopy(&ctx.server.budget, /*final_attempt=*/false)) {
    *error = errors::kOom;
    return nullptr;
  }
  return entry;
}

// Stores a newly created filter under `key` unless a live key appeared
// meanwhile. Returns the entry now under the key: the new one, or (unless
// `fail_if_exists`) an existing one of the same type; otherwise null with
// WRONGTYPE or "item exists". A filter that is not stored is freed here.
template <typename Filter>
EntryPtr StoreNewFilter(CommandContext& ctx, std::string_view key,
                        std::unique_ptr<Filter> filter, bool fail_if_exists,
                        std::optional<std::string_view>* error) {
  bool inserted = false;
  EntryPtr entry = ctx.server.keyspace.Insert(
      ctx.Key(key), std::make_shared<KeyEntry>(std::move(filter)), ctx.now_ms, &inserted,
      [&ctx](const std::string& name, const KeyEntry& created) {
        // The creation is journaled with the filter's exact parameters, so a
        // replay never depends on the defaults in force when it runs.
        ctx.server.journal.RecordFilter(ctx.client.journal, ctx.now_ms, name, created.filter(),
                                        /*with_payload=*/false);
      });
  if (inserted) return entry;
  if (entry->get<Filter>() == nullptr) {
    *error = errors::kWrongType;
    return nullptr;
  }
  if (fail_if_exists) {
    *error = errors::kItemExists;
    return nullptr;
  }
  return entry;
}

// Why a RESERVE of a `Filter` cannot use `key` ("ERR item exists", or
// WRONGTYPE for a key of another type), checked before anything is
// allocated; nullopt when the key is free.
template <typename Filter>
std::optional<std::string_view> ReserveConflict(CommandContext& ctx, std::string_view key) {
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(key), ctx.now_ms);
  if (entry == nullptr) return std::nullopt;
  return entry->get<Filter>() == nullptr ? errors::kWrongType : errors::kItemExists;
}

}  // namespace bloomgate
