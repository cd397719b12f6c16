// Who may be served: Redis's protected mode. Checked at accept for plain
// TCP and right after the handshake for TLS (so a refused TLS client reads
// the -DENIED text over TLS, as with Redis).
#pragma once

#include "config/server_config.h"
#include "server/net/asio.h"

namespace bloomgate {

// True (and a rate-limited warning logged) when protected mode refuses a
// client from `peer`: the default user has no password (Redis's test:
// requirepass empty and no ACL SETUSER default >password, whatever other
// users exist) and the peer is not 127.0.0.1 / ::1.
bool ProtectedModeRefuses(const ServerConfig& config, bool default_user_nopass,
                          const tcp::endpoint& peer);

}  // namespace bloomgate
