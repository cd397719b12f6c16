// CLUSTER FAILOVER [FORCE|TAKEOVER] (Redis 7.0): a replica takes its
// master's place. The checks and TAKEOVER run here; the default and FORCE
// forms hand the work to the bus's cron (cluster_bus/manual_failover.h).
#pragma once

#include <vector>

#include "server/catalogue/command_table.h"

namespace bloomgate {

std::vector<CommandSpec> ClusterFailoverSubcommands();

}  // namespace bloomgate
