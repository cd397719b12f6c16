// The CLUSTER container and the cluster's connection commands (ASKING,
// READONLY, READWRITE), with Redis 7.0's replies and texts. The work on the
// view is server/cluster/'s; these parse, check and render.
#pragma once

#include <vector>

#include "server/catalogue/command_table.h"

namespace bloomgate {

struct CommandContext;

// With the cluster off, fails the command with Redis's text ("ERR This
// instance has cluster support disabled") and returns false. Every CLUSTER
// subcommand's handler starts with it.
bool ClusterEnabledOrFail(CommandContext& ctx);

// For tests: called by CLUSTER SETSLOT NODE right after it counted the
// slot's keys, before it changes the view (null: nothing).
extern void (*setslot_node_counted_hook)();

// The subcommand rows of CLUSTER that this file defines (HELP excluded:
// ClusterCommands adds it last, after any other rows joined in).
std::vector<CommandSpec> ClusterAdminSubcommands();

// CLUSTER (its subcommands: ClusterAdminSubcommands, then other rooms'
// rows, then HELP), ASKING, READONLY, READWRITE.
std::vector<CommandSpec> ClusterCommands();

}  // namespace bloomgate
