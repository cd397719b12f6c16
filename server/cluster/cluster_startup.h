// Turning the cluster on at start-up: cluster-config-file is loaded (the
// node comes back with its id, epochs and slots) or, when there is none, a
// fresh node is made and saved at once, so its id survives even a crash
// before its first change.
#pragma once

#include <string>

#include "config/server_config.h"
#include "persistence/file_system.h"
#include "server/cluster/cluster_state.h"

namespace bloomgate {

// The bus port of a node listening on `port` (cluster-port 0 = port + 10000).
uint16_t ClusterBusPort(const ServerConfig& config);

// With cluster-enabled: loads or creates the view and enables `state`,
// saving every later change to the file through `fs`. False with *error
// (the file's problem, in words an operator can act on) when the file is
// corrupt or cannot be written; the caller must then refuse to start.
// Without cluster-enabled: does nothing and returns true.
bool StartCluster(const ServerConfig& config, FileSystem& fs, ClusterState* state,
                  std::string* error);

}  // namespace bloomgate
