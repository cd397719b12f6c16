// Commands that look at keys without changing them: RANDOMKEY, TOUCH and
// OBJECT, with Redis's replies for values held by a module type (which is
// what a filter is to a Redis client).
#include <algorithm>
#include <optional>
#include <random>

#include "server/catalogue/command_table.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

// RANDOMKEY: the first live key at or after a random point of SCAN's hash
// order, wrapping once; nil when there is none. Expired keys on the way are
// skipped, so a keyspace of only expired keys costs one full walk.
void CmdRandomKey(CommandContext& ctx) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::optional<std::string> found;
  auto visit = [&](const std::string& name, const EntryPtr& entry) {
    if (!found && !entry->ExpiredAt(ctx.now_ms)) found = name;
  };
  for (uint64_t start : {rng(), uint64_t{0}}) {
    uint64_t cursor = start;
    do {
      cursor = ctx.server.keyspace.Scan(cursor, /*count=*/1, ctx.now_ms, visit);
    } while (!found && cursor != 0);
    if (found) break;
  }
  if (found) {
    ctx.reply.Bulk(*found);
  } else {
    ctx.reply.Null();
  }
}

// TOUCH key [key ...]: how many exist; finding each one is an access, so
// its OBJECT IDLETIME starts again from 0 (KeyEntry::NoteAccess).
void CmdTouch(CommandContext& ctx) {
  int64_t count = 0;
  for (std::string_view key : ctx.args.subspan(1)) {
    if (ctx.server.keyspace.Find(ctx.Key(key), ctx.now_ms) != nullptr) ++count;
  }
  ctx.reply.Integer(count);
}

// OBJECT ENCODING | REFCOUNT | FREQ | IDLETIME key: nil for a missing key,
// as Redis. Looking is not an access (Redis's LOOKUP_NOTOUCH): Peek leaves
// the key's access time alone.
EntryPtr FindForObject(CommandContext& ctx) {
  EntryPtr entry = ctx.server.keyspace.Peek(ctx.Key(ctx.args[2]), ctx.now_ms);
  if (entry == nullptr) ctx.reply.Null();
  return entry;
}

// Redis reports "raw" for every module-type value, and a filter is one.
void CmdObjectEncoding(CommandContext& ctx) {
  if (FindForObject(ctx) != nullptr) ctx.reply.Bulk("raw");
}

// A filter belongs to one key only (nothing is shared, as Redis's shared
// integers are), so its count of owners is 1.
void CmdObjectRefCount(CommandContext& ctx) {
  if (FindForObject(ctx) != nullptr) ctx.reply.Integer(1);
}

// Our maxmemory policy is always noeviction, under which Redis keeps no
// access frequency and refuses OBJECT FREQ with this text.
void CmdObjectFreq(CommandContext& ctx) {
  if (FindForObject(ctx) != nullptr) ctx.Fail(errors::kObjectFreqNotTracked);
}

// Whole seconds since a command last found the key (or it was created or
// RESTOREd with IDLETIME), as Redis under a non-LFU policy; ours is always
// noeviction.
void CmdObjectIdleTime(CommandContext& ctx) {
  EntryPtr entry = FindForObject(ctx);
  if (entry == nullptr) return;
  ctx.reply.Integer(std::max<int64_t>(0, ctx.now_ms / 1000 - entry->last_access_s()));
}

void CmdObjectHelp(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "ENCODING <key>",
      "    Return the kind of internal representation used in order to store the value",
      "    associated with a <key> (\"raw\" for every filter).",
      "FREQ <key>",
      "    Return the access frequency index of the <key>; needs an LFU maxmemory",
      "    policy, which Bloomgate does not have.",
      "IDLETIME <key>",
      "    Return the idle time of the <key>, that is the approximated number",
      "    of seconds elapsed since the last access to the key.",
      "REFCOUNT <key>",
      "    Return the number of references of the value associated with the specified",
      "    <key>.",
      "HELP",
      "    Print this help.",
  };
  ctx.reply.ArrayHeader(std::size(kLines));
  for (std::string_view line : kLines) ctx.reply.SimpleString(line);
}

}  // namespace

std::vector<CommandSpec> KeyInspectionCommands() {
  auto object_sub = [](std::string_view name, CommandHandler handler, std::string_view summary,
                       std::string_view since) {
    return CommandSpec{.name = name, .arity = 3, .flags = kCmdReadOnly, .first_key = 2,
                       .last_key = 2, .key_step = 1, .handler = handler, .summary = summary,
                       .group = "generic", .since = since};
  };
  return {
      {.name = "randomkey", .arity = 1, .flags = kCmdReadOnly, .handler = CmdRandomKey,
       .summary = "Returns a random key name from the database", .group = "generic",
       .since = "1.0.0"},
      {.name = "touch", .arity = -2, .flags = kCmdReadOnly | kCmdFast, .first_key = 1,
       .last_key = -1, .key_step = 1, .handler = CmdTouch,
       .summary = "Returns the number of existing keys out of those specified after updating "
                  "the time they were last accessed",
       .group = "generic", .since = "3.2.1"},
      {.name = "object", .arity = -2, .summary = "A container for object introspection commands",
       .group = "generic", .since = "2.2.3",
       .subcommands = {
           object_sub("encoding", CmdObjectEncoding,
                      "Returns the internal encoding of a Redis object", "2.2.3"),
           object_sub("refcount", CmdObjectRefCount,
                      "Returns the reference count of a value of a key", "2.2.3"),
           object_sub("freq", CmdObjectFreq,
                      "Returns the logarithmic access frequency counter of a Redis object",
                      "4.0.0"),
           object_sub("idletime", CmdObjectIdleTime,
                      "Returns the time since the last access to a Redis object", "2.2.3"),
           {.name = "help", .arity = 2, .flags = kCmdLoading | kCmdStale,
            .handler = CmdObjectHelp,
            .summary = "Returns helpful text about the different subcommands",
            .group = "generic", .since = "6.2.0"},
       }},
  };
}

}  // namespace bloomgate
