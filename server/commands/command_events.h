// Keyspace events of the filter families' writes, from one place: RunCommand
// asks for a row's events before its handler runs and publishes them after
// it succeeded, so no family handler names an event. The names are
// valkey-bloom's (class g): "bloom.reserve" when a command created the
// filter, "bloom.add" when it put at least one new item in. DEL, RENAME,
// EXPIRE and PERSIST publish their own (keyspace_commands.cc), expiry
// "expired" (server_context.cc).
#pragma once

#include <span>

#include "server/commands/command_context.h"

namespace bloomgate {

struct CommandEvents;

// The events `spec` may publish, or null (most rows, and every row while
// class g is off): one relaxed load for a command that publishes nothing.
const CommandEvents* EventsOf(ServerContext& server, const CommandSpec& spec);

// Before the handler: whether the command's key exists now (a creation is
// told by its absence before and presence after).
bool KeyExistedBefore(ServerContext& server, std::span<const KeyRef> keys, int64_t now_ms);

// After a successful handler: publishes what it did.
void PublishCommandEvents(CommandContext& ctx, const CommandEvents& events, bool existed);

}  // namespace bloomgate
