// Redis Cluster's routing gate (Redis 7.0's getNodeByQuery): whether this
// node serves a command's keys, or which redirect or refusal the client
// gets instead. Called by the dispatcher for a client's command (under its
// key locks, so a key's presence in a migrating slot decides -ASK for
// good), when MULTI queues one (no locks: EXEC judges again), and by EXEC
// for the whole transaction under all its locks. Replays and a primary's
// stream are never routed.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "server/catalogue/command_table.h"
#include "server/clients/client_state.h"
#include "server/context/server_context.h"

namespace bloomgate {

// One command of those judged together (EXEC judges its whole queue).
struct RoutedCommand {
  const CommandSpec* spec = nullptr;
  std::span<const std::string_view> args;
};

// Whether `client`'s commands are routed at all: the cluster is on and they
// come from a client (not a replay or a replica's stream).
inline bool ClusterRoutes(const ServerContext& server, const ClientState& client) {
  return server.cluster.enabled() && client.journal.origin == JournalOrigin::kClient;
}

// True when this node serves the commands; false with *error set to the
// reply (CROSSSLOT, CLUSTERDOWN, MOVED, ASK, TRYAGAIN). Allocates nothing
// unless it refuses. Key presence is read at `now_ms`.
bool ClusterServes(ServerContext& server, const ClientState& client,
                   std::span<const RoutedCommand> commands, int64_t now_ms, std::string* error);

}  // namespace bloomgate
