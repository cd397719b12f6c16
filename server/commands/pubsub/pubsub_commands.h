// Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
// PUBLISH and PUBSUB, over the hub in server/pubsub/.
#pragma once

#include "server/clients/client_state.h"
#include "server/context/server_context.h"

namespace bloomgate {

// Every channel and pattern of `client`, unsubscribed without a reply: RESET,
// and a connection that closes.
void LeavePubSub(ServerContext& server, ClientState& client);

}  // namespace bloomgate
