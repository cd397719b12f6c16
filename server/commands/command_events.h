// Keyspace events of the filter families' writes, from one place: RunCommand
// asks for a row's events before its handler runs and publishes them after
// it succeeded, so no family handler names an event. One rule for every
// family: "<family>.reserve" when the command created the key,
// "<family>.add" when it put items in (or counted them up), "<family>.del"
// when it took items out, "<family>.<verb>" for a command that rewrites a
// filter whole (cuckoo.compact, tdigest.reset, <family>.loadchunk), under class d (REDISMODULE_NOTIFY_MODULE, Redis's
// class for a module type's own events). The family names are
// valkey-bloom's where it has one (bloom, cuckoo, topk), then cbf, cms,
// tdigest; windowed filters publish their family's (they share its
// commands). DEL, RENAME, EXPIRE and PERSIST publish their own, class g
// (keyspace_commands.cc), RESTORE "restore" (key_copy_commands.cc), expiry
// "expired", class x (server_context.cc).
#pragma once

#include <span>
#include <string_view>

#include "server/commands/command_context.h"

namespace bloomgate {

struct CommandEvents;

// The events `spec` may publish, or null (most rows, and every row while
// class d is off): one relaxed load for a command that publishes nothing.
const CommandEvents* EventsOf(ServerContext& server, const CommandSpec& spec);

// Before the handler: whether the command's key exists now (a creation is
// told by its absence before and presence after).
bool KeyExistedBefore(ServerContext& server, std::span<const KeyRef> keys, int64_t now_ms);

// After a successful handler: publishes what it did. `reply` is the
// command's reply, which tells the rows whose items may all be refused
// (CF.ADDNX, CF.DEL, ...: a 0 per item) whether any took effect.
void PublishCommandEvents(CommandContext& ctx, const CommandEvents& events, bool existed,
                          std::string_view reply);

}  // namespace bloomgate
