// From parsed arguments to a reply: resolves the command row, applies the
// central checks (existence, subcommand, arity, authentication, ACL), queues
// inside MULTI, takes the keys' locks and runs the handler, counting it for
// INFO commandstats.
#pragma once

#include <span>
#include <string_view>

#include "server/clients/client_state.h"
#include "server/context/server_context.h"
#include "server/resp/reply_builder.h"

namespace bloomgate {

// What became of a command, as a value: kFailed when its own reply is an
// error (refused by the central checks, or by its handler through
// CommandContext::Fail), kQueued inside MULTI. kParked: nothing ran and
// nothing was replied; the command writes a filter a snapshot still owes
// itself a big copy of (client.parked_on): the connection must hold it
// (and everything after it) until SnapshotCopier made that copy, then
// dispatch the same command again; or its handler asked for a big filter
// to be built off the loop (client.making, CommandContext::MakeFilter): the
// connection hands it to the FilterMaker and, once made, dispatches the
// same command again, which takes the filter. kPaused: likewise nothing ran; CLIENT
// PAUSE holds the command (clients/client_pause.h): the connection parks it
// until the pause ends or CLIENT UNPAUSE, then dispatches it again.
enum class CommandOutcome { kDone, kFailed, kQueued, kParked, kPaused };

CommandOutcome DispatchCommand(ServerContext& server, ClientState& client,
                               std::span<const std::string_view> args, ReplyBuilder& reply);

// Frees (through the lazy freer) a filter made for `client` that no command
// took: after any dispatch that did not park, and when a parked connection
// is killed or closed before its command runs again.
void DropUntakenFilter(ServerContext& server, ClientState& client);

// The ACL user `client` runs as, re-read from the store when ACL rules
// changed since the client last looked; null when that user was deleted
// (ACL DELUSER closes its connections; until then it may run nothing).
const AclUser* CurrentAclUser(ServerContext& server, ClientState& client);

// The ACL decision for one resolved row and its arguments, as the client's
// current user (a deleted user is refused every command), counted for INFO.
AclDenial CheckClientAcl(ServerContext& server, ClientState& client, const CommandSpec& spec,
                         std::span<const std::string_view> args);

// Test hook: called after a command's handler, with its key locks still
// held and before its record is journaled (null outside tests).
extern void (*after_handler_hook)(const CommandSpec& spec);

// Runs one resolved command. `locks_held`: the caller (EXEC) already holds
// every key lock the command needs, and passes the command's `keys` as
// CommandKeys made them (empty: they are hashed here).
CommandOutcome RunCommand(ServerContext& server, ClientState& client, const CommandSpec& spec,
                          std::span<const std::string_view> args, ReplyBuilder& reply,
                          bool locks_held, std::span<const KeyRef> keys = {});

// The command's keys, each hashed once, in argument order; or none with
// `*all` = true for a command that touches the whole keyspace.
void CommandKeys(const CommandSpec& spec, std::span<const std::string_view> args,
                 std::vector<KeyRef>* keys, bool* all);

// The stripes a command's keys map to, or all stripes (`*all` = true) for a
// command that touches the whole keyspace.
void CommandStripes(const CommandSpec& spec, std::span<const std::string_view> args,
                    std::vector<size_t>* stripes, bool* all);

}  // namespace bloomgate
