// Replication's commands, with Redis's names, arities and replies:
// REPLICAOF / SLAVEOF, ROLE, WAIT, and what a replica's link sends its primary
// (REPLCONF, PSYNC). The work is server/replication/'s.
#include <algorithm>
#include <string>
#include <vector>

#include "server/catalogue/command_table.h"
#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/context/server_context.h"
#include "server/resp/reply_builder.h"
#include "server/replication/replication.h"

namespace bloomgate {
namespace {

bool IsWord(std::string_view text, std::string_view word) {
  ArgParser parser(std::span<const std::string_view>(&text, 1), 0);
  return parser.Accept(word);
}

// REPLICAOF host port | REPLICAOF NO ONE. The link connects in the
// background: +OK means the role changed, not that the primary answered.
void CmdReplicaOf(CommandContext& ctx) {
  if (ctx.server.cluster.enabled()) {
    ctx.Fail(errors::kReplicaOfInClusterMode);
    return;
  }
  if (ctx.client.link_outbox != nullptr) {
    ctx.Fail(errors::kReplicaOfWhileReplicaLink);
    return;
  }
  Replication& replication = *ctx.server.replication;
  if (IsWord(ctx.args[1], "no") && IsWord(ctx.args[2], "one")) {
    replication.Unfollow();
    ctx.server.config.Record([](ServerConfig& config) { config.replicaof.clear(); });
    ctx.reply.Ok();
    return;
  }
  int64_t port = 0;
  if (!ParseInt64(ctx.args[2], &port) || port < 0 || port > 65535) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  const std::string host(ctx.args[1]);
  const Replication::PrimaryView current = replication.Primary();
  if (replication.is_replica() && current.host == host && current.port == port) {
    ctx.reply.SimpleString("OK Already connected to specified master");
    return;
  }
  replication.Follow(host, static_cast<uint16_t>(port));
  // What CONFIG REWRITE writes, so a node Sentinel reconfigured restarts
  // in its new role.
  ctx.server.config.Record([&](ServerConfig& config) {
    config.replicaof = host + " " + std::to_string(port);
  });
  ctx.reply.Ok();
}

// ROLE: ["master", offset, [[ip, port, offset]...]] or
// ["slave", host, port, state, offset].
void CmdRole(CommandContext& ctx) {
  Replication& replication = *ctx.server.replication;
  const uint64_t offset = replication.master_repl_offset();
  if (replication.is_replica()) {
    const Replication::PrimaryView primary = replication.Primary();
    ctx.reply.ArrayHeader(5);
    ctx.reply.Bulk("slave");
    ctx.reply.Bulk(primary.host);
    ctx.reply.Integer(primary.port);
    ctx.reply.Bulk(primary.state);
    ctx.reply.Integer(static_cast<int64_t>(offset));
    return;
  }
  const std::vector<Replication::ReplicaView> replicas = replication.Replicas();
  ctx.reply.ArrayHeader(3);
  ctx.reply.Bulk("master");
  ctx.reply.Integer(static_cast<int64_t>(offset));
  ctx.reply.ArrayHeader(replicas.size());
  for (const Replication::ReplicaView& replica : replicas) {
    ctx.reply.ArrayHeader(3);
    ctx.reply.Bulk(replica.ip);
    ctx.reply.Bulk(std::to_string(replica.port));
    ctx.reply.Bulk(std::to_string(replica.offset));
  }
}

// REPLCONF option value [option value ...]: what a replica tells its
// primary. ACK and GETACK are never answered (Redis's rule: they travel
// inside the stream).
void CmdReplconf(CommandContext& ctx) {
  if (ctx.args.size() % 2 == 0) {
    ctx.Fail(errors::kSyntax);
    return;
  }
  for (size_t i = 1; i + 1 < ctx.args.size(); i += 2) {
    const std::string_view option = ctx.args[i];
    const std::string_view value = ctx.args[i + 1];
    if (IsWord(option, "ack")) {
      uint64_t offset = 0;
      if (ParseUint64(value, &offset)) ctx.server.replication->Ack(ctx.client, offset);
      return;
    }
    if (IsWord(option, "getack")) return;
    if (IsWord(option, "listening-port")) {
      int64_t port = 0;
      if (!ParseInt64(value, &port) || port < 0 || port > 65535) {
        ctx.Fail(errors::kNotInteger);
        return;
      }
      ctx.client.replica_listening_port = static_cast<uint16_t>(port);
    } else if (IsWord(option, "ip-address")) {
      ctx.client.replica_announced_ip = std::string(value.substr(0, 64));
    } else if (!IsWord(option, "capa") && !IsWord(option, "rdb-only") &&
               !IsWord(option, "rdb-filter-only")) {
      ctx.Fail(errors::UnrecognizedReplconfOption(option));
      return;
    }
  }
  ctx.reply.Ok();
}

// PSYNC replid offset: +CONTINUE from the backlog, or a full sync whose
// +FULLRESYNC line and snapshot the sync's thread sends through the link.
void CmdPsync(CommandContext& ctx) {
  if (ctx.client.link_outbox != nullptr || ctx.client.in_exec) {
    ctx.Fail(errors::kReplicaOfWhileReplicaLink);
    return;
  }
  int64_t offset = 0;
  if (!ParseInt64(ctx.args[2], &offset)) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  const std::string reply = ctx.server.replication->Psync(ctx.client, ctx.args[1], offset);
  if (!reply.empty()) ctx.reply.SimpleString(std::string_view(reply).substr(1));
}

// WAIT numreplicas timeout: how many replicas acked every write made
// before it. The dispatcher parks the client until enough did or the
// timeout passed (never its loop); inside EXEC it answers at once.
void CmdWait(CommandContext& ctx) {
  if (ctx.server.replication->is_replica()) {
    ctx.Fail(errors::kWaitOnReplica);
    return;
  }
  int64_t replicas = 0, timeout_ms = 0;
  if (!ParseInt64(ctx.args[1], &replicas) || !ParseInt64(ctx.args[2], &timeout_ms)) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  if (timeout_ms < 0) {
    ctx.Fail(errors::kTimeoutNegative);
    return;
  }
  Replication& replication = *ctx.server.replication;
  int64_t acked = 0;
  if (ctx.client.info != nullptr) {
    (void)replication.WaitDone(ctx.client.info.get(), static_cast<uint64_t>(std::max<int64_t>(replicas, 0)),
                               timeout_ms, ctx.now_ms, &acked);
    replication.EndWait(ctx.client.info.get());
  } else {
    acked = static_cast<int64_t>(replication.ReplicasAcked(replication.master_repl_offset()));
  }
  ctx.reply.Integer(acked);
}

}  // namespace

std::vector<CommandSpec> ReplicationCommands() {
  // Redis 7.0's flags: REPLICAOF is admin and runs on a stale replica and
  // while loading; ROLE is fast; the link's commands are admin.
  constexpr uint32_t kReplicaOf = kCmdAdmin | kCmdNoScript | kCmdStale;
  return {
      {.name = "replicaof", .arity = 3, .flags = kReplicaOf, .handler = CmdReplicaOf,
       .summary = "Configures a server as replica of another, or promotes it to a master",
       .group = "server", .since = "5.0.0"},
      {.name = "slaveof", .arity = 3, .flags = kReplicaOf, .handler = CmdReplicaOf,
       .summary = "Sets a Redis server as a replica of another, or promotes it to being a master",
       .group = "server", .since = "1.0.0"},
      {.name = "role", .arity = 1, .flags = kCmdNoScript | kCmdLoading | kCmdStale | kCmdFast,
       .handler = CmdRole, .summary = "Returns the replication role", .group = "server",
       .since = "2.8.12"},
      {.name = "replconf", .arity = -1,
       .flags = kCmdAdmin | kCmdNoScript | kCmdLoading | kCmdStale, .handler = CmdReplconf,
       .summary = "An internal command for configuring the replication stream",
       .group = "server", .since = "3.0.0"},
      {.name = "wait", .arity = 3, .flags = kCmdNoScript, .handler = CmdWait,
       .summary = "Blocks until the asynchronous replication of all preceding write commands "
                  "sent by the connection are completed",
       .group = "generic", .since = "3.0.0"},
      {.name = "psync", .arity = -3, .max_args = 3,
       .flags = kCmdAdmin | kCmdNoScript, .handler = CmdPsync,
       .summary = "An internal command used in replication", .group = "server",
       .since = "2.8.0"},
  };
}

}  // namespace bloomgate
