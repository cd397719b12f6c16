// What a command handler is given: its arguments, where to write the reply,
// the calling client, and the shared server state.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "server/client_state.h"
#include "server/reply_builder.h"
#include "server/server_context.h"

namespace bloomgate {

struct CommandContext {
  std::span<const std::string_view> args;  // args[0] is the command name
  const CommandSpec& spec;
  ReplyBuilder& reply;
  ClientState& client;
  ServerContext& server;
  int64_t now_ms;
  // A write command sets this when the log must not record it as a command:
  // RESERVE (its creation record says everything) and LOADCHUNK (chunks
  // are staged; the finished filter is logged whole).
  bool skip_log = false;

  WorkerCounters& counters() { return server.stats.worker(client.worker_index); }
};

}  // namespace bloomgate
