// What a command handler is given: its arguments, where to write the reply,
// the calling client, and the shared server state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/context/client_state.h"
#include "server/context/server_context.h"
#include "server/resp/reply_builder.h"

namespace bloomgate {

struct CommandContext {
  std::span<const std::string_view> args;  // args[0] is the command name
  const CommandSpec& spec;
  ReplyBuilder& reply;
  ClientState& client;
  ServerContext& server;
  int64_t now_ms;
  // What the journal records when this write succeeds (server/durability/journal.h):
  // by default the command as sent. A handler sets skip_journal when it
  // journaled the write itself (RESERVE: its creation record says it all;
  // LOADCHUNK: chunks are staged and the finished filter is recorded whole),
  // or fills `effect` to have that recorded instead (Bloom adds).
  bool skip_journal = false;
  std::vector<std::string_view> effect;
  std::string effect_bytes;  // storage `effect` may point into

  // The command's keys, each hashed once by the dispatcher (see
  // keyspace/key_ref.h); set by RunCommand.
  std::span<const KeyRef> keys;
  size_t next_key = 0;  // where Key() looks first: handlers take keys in order

  WorkerCounters& counters() { return server.stats.worker(client.worker_index); }

  // The command's own reply is this error: the command failed, which the
  // dispatcher reads as a value (no journal record, a failed call in INFO
  // commandstats). Errors inside an array reply (a truncated BF.MADD,
  // EXEC's results) are written with reply.Error and fail nothing.
  void Fail(std::string_view text) {
    reply.Error(text);
    failed = true;
  }
  // The same for a message that gets "ERR " unless it has a code of its own
  // (ReplyBuilder::ErrorWithErrPrefix).
  void FailWithErrPrefix(std::string_view message) {
    reply.ErrorWithErrPrefix(message);
    failed = true;
  }
  bool failed = false;

  // The KeyRef of `name`, one of this command's arguments: the dispatcher's
  // if `name` is one of the command's keys (the same bytes of args, not just
  // an equal name), else hashed now.
  KeyRef Key(std::string_view name) {
    for (size_t n = 0, i = next_key; n < keys.size(); ++n, ++i) {
      if (i == keys.size()) i = 0;
      if (keys[i].name.data() == name.data() && keys[i].name.size() == name.size()) {
        next_key = i + 1;
        return keys[i];
      }
    }
    return MakeKeyRef(name);
  }
};

}  // namespace bloomgate
