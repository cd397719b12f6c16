// Per-connection state that commands read and change: protocol version,
// authentication, and the MULTI/WATCH transaction in progress. Owned by one
// connection and touched only on its thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "persistence/dump_payload_assembly.h"
#include "server/access/acl_user.h"
#include "server/clients/client_registry.h"
#include "server/clients/link_outbox.h"
#include "server/clients/watched_key.h"
#include "server/durability/journal.h"
#include "server/keyspace/filter_maker.h"
#include "server/keyspace/keyspace.h"
#include "server/pubsub/subscriber.h"

namespace bloomgate {

struct CommandSpec;

struct QueuedCommand {
  const CommandSpec* spec = nullptr;
  std::vector<std::string> args;  // owned copies: the read buffer moves on
};

struct ClientState {
  std::shared_ptr<ClientInfo> info;
  size_t worker_index = 0;
  bool resp3 = false;
  bool authenticated = false;
  // The ACL user the connection runs as ("default" until AUTH), the copy
  // published at acl_version (access/acl_store.h); the dispatcher takes the
  // new copy when the store's version moves. Null only in tests that build a
  // ClientState by hand: the dispatcher then uses the default user.
  std::shared_ptr<const AclUser> user;
  uint64_t acl_version = 0;
  // The user was deleted (ACL DELUSER): nothing runs until a new AUTH, and
  // the connection is closing. Kept apart from `user` so that a deleted
  // user never falls back to "default".
  bool user_deleted = false;
  uint32_t auth_failures = 0;  // wrong passwords in a row (AuthThrottle)
  // The last command name the connection sent, byte for byte, and the row it
  // named: clients repeat one command (a pipeline of BF.EXISTS), and equal
  // bytes (~15 instructions) skip the table's case-folding hash and compare
  // (~270 of a pipelined BF.EXISTS's ~2,700).
  std::string last_command_name;
  const CommandSpec* last_command_spec = nullptr;
  // The storage of a Bloom add's effect record (CommandContext::
  // ReusedEffect), lent to each add and taken back emptied: the record is
  // made without allocating.
  std::vector<std::string_view> effect_storage;
  bool close_after_reply = false;  // QUIT, protocol errors
  // MONITOR ran (RESET ends it): the connection receives every command's
  // line, is never paused and, as a Redis replica, may not touch keys.
  bool monitor = false;
  // Pub/sub: created at the first SUBSCRIBE or PSUBSCRIBE with
  // `wake_subscriber`, which the connection sets to post a drain of the
  // subscriber's inbox to its own loop.
  std::shared_ptr<Subscriber> subscriber;
  std::function<void()> wake_subscriber;
  // Subscribed to a channel or pattern: Redis's CLIENT_PUBSUB, under which a
  // RESP2 client may run only (P)(UN)SUBSCRIBE, PING, QUIT and RESET.
  bool subscribed() const { return subscriber != nullptr && subscriber->count() > 0; }

  // Replication, on a primary: what the replica said with REPLCONF before
  // its PSYNC (INFO's slaveN ip= and port=), and once PSYNC made this
  // connection a replica's link, what it sends (link_outbox.h).
  uint16_t replica_listening_port = 0;
  std::string replica_announced_ip;
  std::shared_ptr<LinkOutbox> link_outbox;

  // Where its writes come from and the stream offset its current batch of
  // writes reached: the connection waits for it (Journal::AwaitForReply)
  // before it sends the batch's replies. An origin whose policy has
  // recorded_clock (a replay, a replica's stream) runs each command at the
  // time recorded with it, replay_time_ms, so EXPIRE and lazy expiry come
  // out as they did.
  JournalSession journal;
  int64_t replay_time_ms = 0;
  // EXEC is running this client's queued commands, holding their key locks:
  // a command that needs every lock (SAVE) must refuse instead of waiting.
  bool in_exec = false;
  // The moment the running EXEC's commands all run at: as in Redis (call()
  // caches the time once for nested calls), a key whose deadline falls
  // during the transaction is alive for all of it or for none of it.
  int64_t exec_time_ms = 0;
  // The command just dispatched is parked (CommandOutcome::kParked) and the
  // connection runs it again once its background work is done: a snapshot's
  // copy of `parked_on` (SnapshotCopier), or the filter `making` asks for
  // (FilterMaker). `making` stays, made, until that second run takes its
  // filter; one that is not taken (the command refused on its second run,
  // the client killed) is dropped through the lazy freer.
  EntryPtr parked_on;
  std::shared_ptr<MadeFilter> making;

  // Redis Cluster: ASKING lets the next command (or the next EXEC) reach a
  // slot this node is importing, then clears; READONLY lets reads reach a
  // replica of the slot's owner until READWRITE (Redis's CLIENT_ASKING,
  // CLIENT_READONLY; RESET clears both).
  bool cluster_asking = false;
  bool cluster_readonly = false;
  // RESTORE-CHUNK's payload being staged on this connection, for one key:
  // dropped with the connection, so a MIGRATE that fails (and closes it)
  // leaves nothing behind.
  std::string restore_chunk_key;
  std::unique_ptr<DumpPayloadAssembly> restore_chunk;

  bool in_multi = false;
  bool multi_dirty = false;  // a command failed to queue: EXEC aborts
  std::vector<QueuedCommand> queued;
  std::vector<WatchedKey> watched;

  void ResetTransaction() {
    in_multi = false;
    multi_dirty = false;
    queued.clear();
    watched.clear();
    if (info) {
      info->in_multi.store(false, std::memory_order_relaxed);
      info->multi_commands.store(0, std::memory_order_relaxed);
      info->set_watched({});
    }
  }
};

}  // namespace bloomgate
