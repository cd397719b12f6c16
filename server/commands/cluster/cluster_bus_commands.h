// The CLUSTER subcommands that act through the cluster bus: MEET (a
// handshake toward a new node), FORGET (drop a node, banned from gossip
// for 60 s) and LINKS (the bus's connections), with Redis 7.0's replies.
#pragma once

#include <vector>

#include "server/catalogue/command_table.h"

namespace bloomgate {

std::vector<CommandSpec> ClusterBusSubcommands();

}  // namespace bloomgate
