// CLUSTER COUNTKEYSINSLOT and CLUSTER GETKEYSINSLOT, answered from the
// keyspace's per-slot index, with Redis 7.0's texts.
#pragma once

#include <vector>

#include "server/catalogue/command_table.h"

namespace bloomgate {

std::vector<CommandSpec> ClusterSlotKeysSubcommands();

}  // namespace bloomgate
