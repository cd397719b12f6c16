// Commands that copy a key's filter: DUMP / RESTORE (through our own
// checksummed payload, persistence/dump_payload.h, so redis-cli and client
// libraries can move one key between servers; RESTORE and RESTORE-ASKING
// also take the DUMP payloads of RedisBloom's five types, so Redis's own
// MIGRATE moves keys from a RedisBloom server) and COPY, with Redis's
// syntax, replies and texts.
//
// Journal: RESTORE is logged as a RESTORE with an absolute deadline
// (ABSTTL), as Redis propagates it, so a replay at any later time gives the
// key the deadline it got when it ran; a RESTORE whose deadline had already
// passed is logged as the DEL it amounted to (or not at all). COPY is
// logged as sent: on the state it ran on it copies the same filter again.
// A command that changed nothing (COPY replying 0) logs nothing.
#include <limits>
#include <memory>
#include <string>

#include "persistence/dump_payload.h"
#include "server/catalogue/command_table.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/keys/dump_payload_reply.h"

namespace bloomgate {
namespace {

bool HoldsFilter(const AnyFilter& filter) {
  return std::visit([](const auto& f) { return f != nullptr; }, filter);
}

// DUMP key: the payload, or nil for a missing key. Its row holds the key
// exclusively (kCmdExclusiveKeys), so no Bloom add runs while the header
// and the bits are copied.
void CmdDump(CommandContext& ctx) {
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms);
  if (entry == nullptr) {
    ctx.reply.Null();
    return;
  }
  ctx.reply.Bulk(EncodeDumpPayload(entry->filter()));
}

struct RestoreOptions {
  bool replace = false;
  bool absttl = false;
  int64_t idle_s = -1;  // -1 = not given
};

// RESTORE's options, in Redis's order of checks: IDLETIME and FREQ exclude
// each other (the second one is a syntax error, as Redis).
bool ParseRestoreOptions(CommandContext& ctx, RestoreOptions* options) {
  bool freq = false;
  for (size_t i = 4; i < ctx.args.size(); ++i) {
    std::string_view word = ctx.args[i];
    const bool has_value = i + 1 < ctx.args.size();
    int64_t value = 0;
    if (EqualsIgnoreCase(word, "REPLACE")) {
      options->replace = true;
    } else if (EqualsIgnoreCase(word, "ABSTTL")) {
      options->absttl = true;
    } else if (EqualsIgnoreCase(word, "IDLETIME") && has_value && !freq) {
      if (!ParseInt64(ctx.args[++i], &value)) {
        ctx.Fail(errors::kNotInteger);
        return false;
      }
      if (value < 0) {
        ctx.Fail(errors::kInvalidIdleTime);
        return false;
      }
      options->idle_s = value;
    } else if (EqualsIgnoreCase(word, "FREQ") && has_value && options->idle_s < 0) {
      if (!ParseInt64(ctx.args[++i], &value)) {
        ctx.Fail(errors::kNotInteger);
        return false;
      }
      if (value < 0 || value > 255) {
        ctx.Fail(errors::kInvalidFreq);
        return false;
      }
      // Accepted and not kept: our maxmemory policy is always noeviction,
      // under which Redis ignores FREQ too (OBJECT FREQ refuses).
      freq = true;
    } else {
      ctx.Fail(errors::kSyntax);
      return false;
    }
  }
  return true;
}

// A RESTORE payload decoded by the filter maker: the filter, or why not.
struct DecodedPayload {
  AnyFilter filter;
  DumpPayloadError error = DumpPayloadError::kNone;
};

// Decodes RESTORE's payload into *filter (*error: why not): inline when
// small or MakeFilter would build inline; else on the filter maker's thread
// from a copy of the payload (the connection's input buffer is not ours to
// share with another thread): one memcpy on the loop, against a decode that
// writes every page of the filter (a 256 MiB cuckoo payload stalled the loop
// 21 s on a loaded machine). False when the command parked; its second run
// checks the key again before it publishes, as an inline RESTORE does.
bool DecodeRestorePayload(CommandContext& ctx, AnyFilter* filter, DumpPayloadError* error) {
  const std::string_view payload = ctx.args[3];
  if (!ctx.HasMadeFilter() && !ctx.WouldPark(payload.size())) {
    *error = DecodeDumpPayload(payload, ctx.server.filter_limits(), &ctx.server.budget, filter);
    return true;
  }
  std::unique_ptr<DecodedPayload> made;
  FilterStatus status = FilterStatus::kOk;
  MemoryRefusal refusal;
  if (!ctx.MakeFilter(payload.size(),
                      [copy = std::string(payload), limits = ctx.server.filter_limits(),
                       budget = &ctx.server.budget](std::unique_ptr<DecodedPayload>* out,
                                                    MemoryRefusal*) mutable {
                        *out = std::make_unique<DecodedPayload>();
                        (*out)->error = DecodeDumpPayload(copy, limits, budget, &(*out)->filter);
                        std::string().swap(copy);  // freed here, not on the loop
                        return FilterStatus::kOk;
                      },
                      &status, &made, &refusal)) {
    return false;
  }
  *error = made->error;
  *filter = std::move(made->filter);
  return true;
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
void CmdRestore(CommandContext& ctx) {
  RestoreOptions options;
  if (!ParseRestoreOptions(ctx, &options)) return;
  const KeyRef key = ctx.Key(ctx.args[1]);
  Keyspace& keyspace = ctx.server.keyspace;
  if (!options.replace && keyspace.Find(key, ctx.now_ms) != nullptr) {
    ctx.Fail(errors::kBusyKey);
    return;
  }
  int64_t ttl = 0;
  if (!ParseInt64(ctx.args[2], &ttl)) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  if (ttl < 0) {
    ctx.Fail(errors::kInvalidTtl);
    return;
  }
  int64_t at_ms = ttl;
  if (ttl != 0 && !options.absttl) {
    if (ttl > std::numeric_limits<int64_t>::max() - ctx.now_ms) {
      ctx.Fail(errors::InvalidExpireTime("restore"));
      return;
    }
    at_ms += ctx.now_ms;
  }
  AnyFilter filter;
  DumpPayloadError decoded = DumpPayloadError::kNone;
  if (!DecodeRestorePayload(ctx, &filter, &decoded)) return;  // parked
  if (decoded != DumpPayloadError::kNone) {
    ctx.Fail(DumpPayloadErrorText(decoded));
    return;
  }
  const bool deleted = options.replace && keyspace.Erase(key, ctx.now_ms);
  if (at_ms != 0 && at_ms <= ctx.now_ms) {
    // Already expired: the key is not created (and a replaced one is gone),
    // as Redis, which then propagates a DEL or nothing.
    if (deleted) {
      ctx.effect = {"DEL", ctx.args[1]};
      ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "del", ctx.args[1]);
    } else {
      ctx.skip_journal = true;
    }
    ctx.reply.Ok();
    return;
  }
  auto entry = std::make_shared<KeyEntry>(std::move(filter));
  if (options.idle_s >= 0) entry->SetIdleTime(ctx.now_ms, options.idle_s);
  bool inserted = false;
  keyspace.Insert(key, entry, ctx.now_ms, &inserted);
  // The key is held exclusively and was free (or just erased): nothing else
  // can have taken it.
  if (at_ms != 0) keyspace.SetExpire(key, at_ms, ctx.now_ms);
  if (at_ms != 0 && !options.absttl) {
    ctx.effect.assign(ctx.args.begin(), ctx.args.end());
    ctx.effect_bytes = std::to_string(at_ms);
    ctx.effect[2] = ctx.effect_bytes;
    ctx.effect.push_back("ABSTTL");
  }
  ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "restore", ctx.args[1]);
  ctx.reply.Ok();
}

// A big COPY's source as the filter maker copied it: the copy (null inside
// when the budget refused it, or when a snapshot cut took the entry's owed
// copy for itself first), and which entry at which version it copies.
struct CopiedSource {
  AnyFilter filter;
  bool taken = false;  // the copy owed to this COPY was made (or refused)
  const KeyEntry* source = nullptr;
  uint64_t version = 0;
};

// Copies `source` into *copy: inline under this command's locks (both keys
// are held exclusively, so no write to the source runs meanwhile) when it is
// small or MakeFilter would build inline; else off the event loop (a 1 GiB
// Bloom filter's copy stalled its loop 43 s, a 2 GB top-k's 100 s, on a
// loaded machine). False when the command parked.
//
// Off the loop, the source is read under the copy-on-write rule a snapshot
// cut uses (KeyEntry::ArmSnapshotCopy): armed now, under this command's
// exclusive lock on it, its writers park until the filter maker has made the
// copy (or make it themselves first), so the copy is the source as this run
// sees it. The second run takes it only if the key still holds that entry,
// unmodified (KeyEntry::version): a write that ran between the copy and the
// second run is journaled before this COPY, so a replay would copy the
// written source; then it copies again. A cut that re-arms the entry before
// the copy is made takes the copy for the snapshot: copied again as well.
bool CopySource(CommandContext& ctx, const EntryPtr& source, AnyFilter* copy) {
  const uint64_t bytes = source->MemoryUsage();
  MemoryBudget* const budget = &ctx.server.budget;
  if (!ctx.HasMadeFilter() && (!ctx.WouldPark(bytes) || source->snapshot_copy_owed())) {
    *copy = CloneFilter(source->filter(), budget);
    return true;
  }
  for (;;) {
    auto owed = std::make_shared<SnapshotCopy>();
    if (!ctx.HasMadeFilter()) source->ArmSnapshotCopy(owed);
    std::unique_ptr<CopiedSource> made;
    FilterStatus status = FilterStatus::kOk;
    MemoryRefusal refusal;
    if (!ctx.MakeFilter(bytes,
                        [source, owed, version = source->version(), budget](
                            std::unique_ptr<CopiedSource>* out, MemoryRefusal*) {
                          // Final: a copy the budget refuses disarms the entry
                          // (its writers go on) instead of staying owed.
                          (void)source->TakeSnapshotCopy(budget, /*final_attempt=*/true);
                          *out = std::make_unique<CopiedSource>();
                          (*out)->filter = std::move(owed->filter);
                          (*out)->taken = owed->taken;
                          (*out)->source = source.get();
                          (*out)->version = version;
                          return FilterStatus::kOk;
                        },
                        &status, &made, &refusal)) {
      return false;
    }
    if (made->taken && made->source == source.get() && made->version == source->version()) {
      *copy = std::move(made->filter);  // null inside: refused by the budget
      return true;
    }
    ctx.server.lazy_freer.Free(std::shared_ptr<CopiedSource>(std::move(made)));
  }
}

// COPY source destination [DB destination-db] [REPLACE]: 1 if copied, 0 if
// the source is missing or the destination exists without REPLACE. We have
// one database, so DB takes 0 only.
void CmdCopy(CommandContext& ctx) {
  bool replace = false;
  for (size_t i = 3; i < ctx.args.size(); ++i) {
    if (EqualsIgnoreCase(ctx.args[i], "REPLACE")) {
      replace = true;
    } else if (EqualsIgnoreCase(ctx.args[i], "DB") && i + 1 < ctx.args.size()) {
      int64_t db = 0;
      if (!ParseInt64(ctx.args[++i], &db)) {
        ctx.Fail(errors::kNotInteger);
        return;
      }
      if (db != 0) {
        ctx.Fail(errors::kDbIndexOutOfRange);
        return;
      }
    } else {
      ctx.Fail(errors::kSyntax);
      return;
    }
  }
  if (ctx.args[1] == ctx.args[2]) {
    ctx.Fail(errors::kSameObject);
    return;
  }
  Keyspace& keyspace = ctx.server.keyspace;
  const KeyRef src = ctx.Key(ctx.args[1]);
  const KeyRef dst = ctx.Key(ctx.args[2]);
  EntryPtr source = keyspace.Find(src, ctx.now_ms);
  if (source == nullptr || (!replace && keyspace.Find(dst, ctx.now_ms) != nullptr)) {
    ctx.skip_journal = true;  // nothing changed
    ctx.reply.Integer(0);
    return;
  }
  // A deep copy, charged to maxmemory like any filter.
  AnyFilter copy;
  if (!CopySource(ctx, source, &copy)) return;  // parked
  if (!HoldsFilter(copy)) {
    ctx.Fail(errors::kOom);
    return;
  }
  if (replace) keyspace.Erase(dst, ctx.now_ms);
  bool inserted = false;
  keyspace.Insert(dst, std::make_shared<KeyEntry>(std::move(copy)), ctx.now_ms, &inserted);
  // The deadline goes with the copy, as Redis's COPY does.
  if (const int64_t at = source->expire_at_ms(); at != 0) keyspace.SetExpire(dst, at, ctx.now_ms);
  ctx.reply.Integer(1);
}

}  // namespace

std::vector<CommandSpec> KeyCopyCommands() {
  return {
      {.name = "dump", .arity = 2, .flags = kCmdReadOnly | kCmdExclusiveKeys, .first_key = 1,
       .last_key = 1, .key_step = 1, .handler = CmdDump,
       .summary = "Returns a serialized representation of the value stored at a key",
       .group = "generic", .since = "2.6.0"},
      {.name = "restore", .arity = -4, .flags = kCmdWrite | kCmdDenyOom | kCmdDangerous, .first_key = 1,
       .last_key = 1, .key_step = 1, .handler = CmdRestore,
       .summary = "Creates a key from the serialized representation of a value",
       .group = "generic", .since = "2.6.0"},
      // What Redis Cluster's MIGRATE sends instead of RESTORE (its ASKING
      // flag only matters to a cluster node; we answer every key): the same
      // command, so MIGRATE from a cluster node moves keys here as well.
      {.name = "restore-asking", .arity = -4,
       .flags = kCmdWrite | kCmdDenyOom | kCmdDangerous, .first_key = 1, .last_key = 1, .key_step = 1, .handler = CmdRestore,
       .summary = "An internal command for migrating keys in a cluster", .group = "server",
       .since = "3.0.0"},
      {.name = "copy", .arity = -3, .max_args = 7, .flags = kCmdWrite | kCmdDenyOom,
       .first_key = 1, .last_key = 2, .key_step = 1, .handler = CmdCopy,
       .summary = "Copies the value of a key to a new key", .group = "generic",
       .since = "6.2.0"},
  };
}

}  // namespace bloomgate
