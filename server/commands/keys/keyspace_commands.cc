// Generic key commands: existence, deletion, renaming, iteration and expiry,
// with Redis's replies and texts. They work on any filter type.
#include <limits>
#include <vector>

#include "server/base/glob.h"
#include "server/catalogue/command_table.h"
#include "server/catalogue/family_registry.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/server/memory_report.h"
#include "server/keyspace/key_locks.h"
#include "server/keyspace/lazy_freer.h"

namespace bloomgate {
namespace {

// DBSIZE
void CmdDbSize(CommandContext& ctx) {
  ctx.reply.Integer(static_cast<int64_t>(ctx.server.keyspace.Size()));
}

// EXISTS key [key ...] — a key named twice counts twice, as in Redis.
void CmdExists(CommandContext& ctx) {
  int64_t count = 0;
  for (std::string_view key : ctx.args.subspan(1)) {
    if (ctx.server.keyspace.Find(ctx.Key(key), ctx.now_ms) != nullptr) ++count;
  }
  ctx.reply.Integer(count);
}

// DEL / UNLINK key [key ...]. Freeing a filter is one munmap-sized free, so
// UNLINK does the same work as DEL.
void CmdDel(CommandContext& ctx) {
  int64_t removed = 0;
  for (std::string_view key : ctx.args.subspan(1)) {
    if (ctx.server.keyspace.Erase(ctx.Key(key), ctx.now_ms)) {
      ++removed;
      ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "del", key);
    }
  }
  ctx.reply.Integer(removed);
}

// TYPE key
void CmdType(CommandContext& ctx) {
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms);
  ctx.reply.SimpleString(entry == nullptr ? "none" : TypeName(entry->type()));
}

// KEYS pattern
void CmdKeys(CommandContext& ctx) {
  std::vector<std::string> names;
  ctx.server.keyspace.ForEachKey(ctx.args[1], ctx.now_ms,
                                 [&](const std::string& name, const EntryPtr&) {
                                   names.push_back(name);
                                 });
  ctx.reply.ArrayHeader(names.size());
  for (const std::string& name : names) ctx.reply.Bulk(name);
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
void CmdScan(CommandContext& ctx) {
  uint64_t cursor = 0;
  if (!ParseUint64(ctx.args[1], &cursor)) {
    ctx.Fail(errors::kInvalidCursor);
    return;
  }
  ArgParser parser(ctx.args, 2);
  std::string_view pattern = "*";
  std::optional<std::string_view> type;
  uint64_t count = 10;
  while (parser.HasNext() && !parser.failed()) {
    if (parser.Accept("MATCH")) {
      pattern = parser.Next(errors::kSyntax);
    } else if (parser.Accept("COUNT")) {
      int64_t requested = parser.NextInt64(errors::kSyntax, errors::kNotInteger);
      if (!parser.failed() && requested < 1) parser.Fail(errors::kSyntax);
      count = static_cast<uint64_t>(requested);
    } else if (parser.Accept("TYPE")) {
      type = parser.Next(errors::kSyntax);
    } else {
      parser.Fail(errors::kSyntax);
    }
  }
  if (parser.failed()) {
    ctx.Fail(parser.error());
    return;
  }
  std::vector<std::string> names;
  bool all = pattern == "*";
  uint64_t next = ctx.server.keyspace.Scan(
      cursor, count, ctx.now_ms, [&](const std::string& name, const EntryPtr& entry) {
        if (!all && !GlobMatch(pattern, name)) return;
        if (type && !EqualsIgnoreCase(*type, TypeName(entry->type()))) return;
        names.push_back(name);
      });
  ctx.reply.ArrayHeader(2);
  ctx.reply.Bulk(std::to_string(next));
  ctx.reply.ArrayHeader(names.size());
  for (const std::string& name : names) ctx.reply.Bulk(name);
}

// Redis's two events of a rename, source first.
void NotifyRename(CommandContext& ctx) {
  ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "rename_from", ctx.args[1]);
  ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "rename_to", ctx.args[2]);
}

// RENAME key newkey: the documented way to swap a rebuilt filter in.
void CmdRename(CommandContext& ctx) {
  auto status = ctx.server.keyspace.Rename(ctx.Key(ctx.args[1]), ctx.Key(ctx.args[2]), /*nx=*/false, ctx.now_ms);
  if (status == Keyspace::RenameStatus::kNoSuchKey) {
    ctx.Fail(errors::kNoSuchKey);
    return;
  }
  NotifyRename(ctx);
  ctx.reply.Ok();
}

// RENAMENX key newkey
void CmdRenameNx(CommandContext& ctx) {
  auto status = ctx.server.keyspace.Rename(ctx.Key(ctx.args[1]), ctx.Key(ctx.args[2]), /*nx=*/true, ctx.now_ms);
  if (status == Keyspace::RenameStatus::kNoSuchKey) {
    ctx.Fail(errors::kNoSuchKey);
    return;
  }
  if (status == Keyspace::RenameStatus::kOk) NotifyRename(ctx);
  ctx.reply.Integer(status == Keyspace::RenameStatus::kOk ? 1 : 0);
}

// FLUSHALL / FLUSHDB [ASYNC | SYNC]
void CmdFlush(CommandContext& ctx) {
  if (ctx.args.size() == 2 && !EqualsIgnoreCase(ctx.args[1], "ASYNC") &&
      !EqualsIgnoreCase(ctx.args[1], "SYNC")) {
    ctx.Fail(errors::kSyntax);
    return;
  }
  ctx.server.keyspace.Clear();
  // The filters go to the lazy freer (lazy_freer.h), so nothing is freed
  // under the global lock. FLUSHALL / SYNC (Redis's default) still replies
  // only once their memory is given back, as Redis does: the wait runs
  // when this thread lets go of its key locks (KeyLocks::FreeAfterUnlock),
  // so only this client's event loop waits, not the whole server. ASYNC
  // replies at once.
  if (ctx.args.size() == 1 || EqualsIgnoreCase(ctx.args[1], "SYNC")) {
    LazyFreer* freer = &ctx.server.lazy_freer;
    KeyLocks::FreeAfterUnlock(std::shared_ptr<void>(
        static_cast<void*>(freer), [](void* f) { static_cast<LazyFreer*>(f)->WaitIdle(); }));
  }
  ctx.reply.Ok();
}

// The expire family shares one implementation: how the time argument is
// read (relative or absolute, seconds or milliseconds) is the only difference.
struct ExpireForm {
  bool absolute;
  bool milliseconds;
};

void SetExpire(CommandContext& ctx, ExpireForm form) {
  int64_t amount = 0;
  if (!ParseInt64(ctx.args[2], &amount)) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  bool nx = false, xx = false, gt = false, lt = false;
  for (std::string_view option : ctx.args.subspan(3)) {
    if (EqualsIgnoreCase(option, "NX")) {
      nx = true;
    } else if (EqualsIgnoreCase(option, "XX")) {
      xx = true;
    } else if (EqualsIgnoreCase(option, "GT")) {
      gt = true;
    } else if (EqualsIgnoreCase(option, "LT")) {
      lt = true;
    } else {
      ctx.Fail(errors::UnsupportedOption(option));
      return;
    }
  }
  if (nx && (xx || gt || lt)) {
    ctx.Fail(errors::kExpireOptionsConflict);
    return;
  }
  if (gt && lt) {
    ctx.Fail(errors::kExpireGtLtConflict);
    return;
  }
  // Convert to absolute milliseconds with overflow checks (Redis refuses
  // times that do not fit with "invalid expire time").
  int64_t at_ms = amount;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  bool overflow = false;
  if (!form.milliseconds) {
    overflow = amount > kMax / 1000 || amount < -kMax / 1000;
    at_ms = amount * (overflow ? 1 : 1000);
  }
  if (!overflow && !form.absolute) {
    overflow = at_ms > kMax - ctx.now_ms;
    at_ms += overflow ? 0 : ctx.now_ms;
  }
  if (overflow) {
    ctx.Fail(errors::InvalidExpireTime(AsciiLower(ctx.args[0])));
    return;
  }
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms);
  if (entry == nullptr) {
    ctx.reply.Integer(0);
    return;
  }
  int64_t current = entry->expire_at_ms();  // 0 = persistent, i.e. infinite TTL
  if ((nx && current != 0) || (xx && current == 0) ||
      (gt && (current == 0 || at_ms <= current)) || (lt && current != 0 && at_ms >= current)) {
    ctx.reply.Integer(0);
    return;
  }
  if (at_ms <= ctx.now_ms) {
    // A deadline in the past deletes the key at once, as in Redis ("del").
    const bool erased = ctx.server.keyspace.Erase(ctx.Key(ctx.args[1]), ctx.now_ms);
    if (erased) ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "del", ctx.args[1]);
    ctx.reply.Integer(erased ? 1 : 0);
    return;
  }
  const bool set = ctx.server.keyspace.SetExpire(ctx.Key(ctx.args[1]), at_ms, ctx.now_ms);
  if (set) ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "expire", ctx.args[1]);
  ctx.reply.Integer(set ? 1 : 0);
}

void CmdExpire(CommandContext& ctx) { SetExpire(ctx, {.absolute = false, .milliseconds = false}); }
void CmdPExpire(CommandContext& ctx) { SetExpire(ctx, {.absolute = false, .milliseconds = true}); }
void CmdExpireAt(CommandContext& ctx) { SetExpire(ctx, {.absolute = true, .milliseconds = false}); }
void CmdPExpireAt(CommandContext& ctx) { SetExpire(ctx, {.absolute = true, .milliseconds = true}); }

// TTL / PTTL / EXPIRETIME / PEXPIRETIME: -2 missing key, -1 no deadline.
void ReplyDeadline(CommandContext& ctx, bool absolute, bool milliseconds) {
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms);
  if (entry == nullptr) {
    ctx.reply.Integer(-2);
    return;
  }
  int64_t at = entry->expire_at_ms();
  if (at == 0) {
    ctx.reply.Integer(-1);
    return;
  }
  int64_t value = absolute ? at : std::max<int64_t>(at - ctx.now_ms, 0);
  // Seconds round to nearest, as Redis's TTL does.
  ctx.reply.Integer(milliseconds ? value : (value + 500) / 1000);
}

void CmdTtl(CommandContext& ctx) { ReplyDeadline(ctx, false, false); }
void CmdPTtl(CommandContext& ctx) { ReplyDeadline(ctx, false, true); }
void CmdExpireTime(CommandContext& ctx) { ReplyDeadline(ctx, true, false); }
void CmdPExpireTime(CommandContext& ctx) { ReplyDeadline(ctx, true, true); }

// PERSIST key
void CmdPersist(CommandContext& ctx) {
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(ctx.args[1]), ctx.now_ms);
  if (entry == nullptr || entry->expire_at_ms() == 0) {
    ctx.reply.Integer(0);
    return;
  }
  const bool persisted = ctx.server.keyspace.SetExpire(ctx.Key(ctx.args[1]), 0, ctx.now_ms);
  if (persisted) ctx.server.NotifyKeyspaceEvent(kNotifyGeneric, "persist", ctx.args[1]);
  ctx.reply.Integer(persisted ? 1 : 0);
}

// MEMORY USAGE key [SAMPLES count]: exact, so SAMPLES is accepted and unused.
void CmdMemoryUsage(CommandContext& ctx) {
  if (ctx.args.size() == 5) {
    uint64_t samples = 0;
    if (!EqualsIgnoreCase(ctx.args[3], "SAMPLES")) {
      ctx.Fail(errors::kSyntax);
      return;
    }
    if (!ParseUint64(ctx.args[4], &samples)) {
      ctx.Fail(errors::kNotInteger);
      return;
    }
  } else if (ctx.args.size() != 3) {
    ctx.Fail(errors::kSyntax);
    return;
  }
  EntryPtr entry = ctx.server.keyspace.Find(ctx.Key(ctx.args[2]), ctx.now_ms);
  if (entry == nullptr) {
    ctx.reply.Null();
    return;
  }
  ctx.reply.Integer(static_cast<int64_t>(entry->MemoryUsage() + ctx.args[2].size()));
}

}  // namespace

std::vector<CommandSpec> KeyspaceCommands() {
  constexpr uint32_t kReadFast = kCmdReadOnly | kCmdFast;
  constexpr uint32_t kWriteFast = kCmdWrite | kCmdFast;
  auto one_key = [](std::string_view name, int arity, int max_args, uint32_t flags,
                    CommandHandler handler, std::string_view summary,
                    std::string_view since) {
    return CommandSpec{.name = name, .arity = arity, .max_args = max_args, .flags = flags,
                       .first_key = 1, .last_key = 1, .key_step = 1, .handler = handler,
                       .summary = summary, .group = "generic", .since = since};
  };
  return {
      {.name = "dbsize", .arity = 1, .flags = kReadFast, .handler = CmdDbSize,
       .summary = "Returns the number of keys in the database", .group = "server",
       .since = "1.0.0"},
      {.name = "exists", .arity = -2, .flags = kReadFast, .first_key = 1, .last_key = -1,
       .key_step = 1, .handler = CmdExists, .summary = "Determines whether one or more keys exist",
       .group = "generic", .since = "1.0.0"},
      {.name = "del", .arity = -2, .flags = kCmdWrite, .first_key = 1, .last_key = -1,
       .key_step = 1, .handler = CmdDel, .summary = "Deletes one or more keys",
       .group = "generic", .since = "1.0.0"},
      {.name = "unlink", .arity = -2, .flags = kWriteFast, .first_key = 1, .last_key = -1,
       .key_step = 1, .handler = CmdDel, .summary = "Deletes one or more keys",
       .group = "generic", .since = "4.0.0"},
      one_key("type", 2, 0, kReadFast, CmdType, "Determines the type of value stored at a key",
              "1.0.0"),
      {.name = "keys", .arity = 2, .flags = kCmdReadOnly | kCmdAllKeys | kCmdDangerous, .handler = CmdKeys,
       .summary = "Returns all key names that match a pattern", .group = "generic",
       .since = "1.0.0"},
      {.name = "scan", .arity = -2, .max_args = 8, .flags = kCmdReadOnly | kCmdAllKeys,
       .handler = CmdScan, .summary = "Iterates over the key names in the database",
       .group = "generic", .since = "2.8.0"},
      {.name = "rename", .arity = 3, .flags = kCmdWrite, .first_key = 1, .last_key = 2,
       .key_step = 1, .handler = CmdRename,
       .summary = "Renames a key and overwrites the destination", .group = "generic",
       .since = "1.0.0"},
      {.name = "renamenx", .arity = 3, .flags = kWriteFast, .first_key = 1, .last_key = 2,
       .key_step = 1, .handler = CmdRenameNx,
       .summary = "Renames a key only when the target key name doesn't exist",
       .group = "generic", .since = "1.0.0"},
      {.name = "flushall", .arity = -1, .max_args = 2, .flags = kCmdWrite | kCmdAllKeys,
       .handler = CmdFlush, .summary = "Removes all keys from all databases",
       .group = "server", .since = "1.0.0"},
      {.name = "flushdb", .arity = -1, .max_args = 2, .flags = kCmdWrite | kCmdAllKeys,
       .handler = CmdFlush, .summary = "Remove all keys from the current database",
       .group = "server", .since = "1.0.0"},
      one_key("expire", -3, 0, kWriteFast, CmdExpire,
              "Sets the expiration time of a key in seconds", "1.0.0"),
      one_key("pexpire", -3, 0, kWriteFast, CmdPExpire,
              "Sets the expiration time of a key in milliseconds", "2.6.0"),
      one_key("expireat", -3, 0, kWriteFast, CmdExpireAt,
              "Sets the expiration time of a key to a Unix timestamp", "1.2.0"),
      one_key("pexpireat", -3, 0, kWriteFast, CmdPExpireAt,
              "Sets the expiration time of a key to a Unix milliseconds timestamp", "2.6.0"),
      one_key("ttl", 2, 0, kReadFast, CmdTtl, "Returns the expiration time in seconds of a key",
              "1.0.0"),
      one_key("pttl", 2, 0, kReadFast, CmdPTtl,
              "Returns the expiration time in milliseconds of a key", "2.6.0"),
      one_key("expiretime", 2, 0, kReadFast, CmdExpireTime,
              "Returns the expiration time of a key as a Unix timestamp", "7.0.0"),
      one_key("pexpiretime", 2, 0, kReadFast, CmdPExpireTime,
              "Returns the expiration time of a key as a Unix milliseconds timestamp", "7.0.0"),
      one_key("persist", 2, 0, kWriteFast, CmdPersist, "Removes the expiration time of a key",
              "2.2.0"),
      {.name = "memory", .arity = -2, .summary = "A container for memory diagnostics commands",
       .group = "server", .since = "4.0.0",
       .subcommands = {{.name = "usage", .arity = -3, .max_args = 5, .flags = kCmdReadOnly,
                        .first_key = 2, .last_key = 2, .key_step = 1,
                        .handler = CmdMemoryUsage,
                        .summary = "Estimates the memory usage of a key", .group = "server",
                        .since = "4.0.0"},
                       {.name = "stats", .arity = 2, .handler = CmdMemoryStats,
                        .summary = "Returns details about memory usage", .group = "server",
                        .since = "4.0.0"},
                       {.name = "doctor", .arity = 2, .handler = CmdMemoryDoctor,
                        .summary = "Outputs a memory problems report", .group = "server",
                        .since = "4.0.0"},
                       {.name = "help", .arity = 2, .flags = kCmdLoading | kCmdStale,
                        .handler = CmdMemoryHelp,
                        .summary = "Returns helpful text about the different subcommands",
                        .group = "server", .since = "4.0.0"}}},
  };
}

}  // namespace bloomgate
