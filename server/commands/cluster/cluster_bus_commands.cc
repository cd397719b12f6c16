#include "server/commands/cluster/cluster_bus_commands.h"

#include <string>

#include "server/cluster_bus/cluster_bus.h"
#include "server/commands/arg_parser.h"
#include "server/commands/cluster/cluster_commands.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

// The bus runs whenever the cluster is on; a server without one (the unit
// tests' in-process servers) answers as a node whose bus is not up.
ClusterBus* BusOrFail(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return nullptr;
  ClusterBus* bus = CurrentClusterBus();
  if (bus == nullptr) ctx.Fail(errors::kClusterBusDown);
  return bus;
}

// CLUSTER MEET ip port [cport]: Redis's parse order and texts
// (cluster.c: the ports first, then the address as a whole).
void CmdClusterMeet(CommandContext& ctx) {
  ClusterBus* bus = BusOrFail(ctx);
  if (bus == nullptr) return;
  int64_t port = 0;
  if (!ParseInt64(ctx.args[3], &port)) {
    ctx.Fail(errors::InvalidTcpBasePort(ctx.args[3]));
    return;
  }
  int64_t cport = port + 10000;
  if (ctx.args.size() == 5 && !ParseInt64(ctx.args[4], &cport)) {
    ctx.Fail(errors::InvalidTcpBusPort(ctx.args[4]));
    return;
  }
  const bool in_range = port > 0 && port <= 65535 && cport > 0 && cport <= 65535;
  const MeetOutcome outcome =
      in_range ? bus->Meet(ctx.args[2], static_cast<uint16_t>(port), static_cast<uint16_t>(cport))
               : MeetOutcome::kBadAddress;
  switch (outcome) {
    case MeetOutcome::kOk: ctx.reply.Ok(); return;
    case MeetOutcome::kBadAddress:
      ctx.Fail(errors::InvalidNodeAddress(ctx.args[2], ctx.args[3]));
      return;
    case MeetOutcome::kTooManyNodes: ctx.Fail(errors::TooManyClusterNodes(kMaxClusterNodes)); return;
  }
}

void CmdClusterForget(CommandContext& ctx) {
  ClusterBus* bus = BusOrFail(ctx);
  if (bus == nullptr) return;
  switch (bus->Forget(ctx.args[2])) {
    case ForgetOutcome::kOk: ctx.reply.Ok(); return;
    case ForgetOutcome::kUnknownNode: ctx.Fail(errors::UnknownNode(ctx.args[2])); return;
    case ForgetOutcome::kMyself: ctx.Fail(errors::kCantForgetMyself); return;
    case ForgetOutcome::kMyMaster: ctx.Fail(errors::kCantForgetMyMaster); return;
  }
}

// CLUSTER LINKS: one map per link, Redis 7.0's six fields in its order.
void CmdClusterLinks(CommandContext& ctx) {
  ClusterBus* bus = BusOrFail(ctx);
  if (bus == nullptr) return;
  const std::vector<BusLinkInfo> links = bus->Links();
  ctx.reply.ArrayHeader(links.size());
  for (const BusLinkInfo& link : links) {
    ctx.reply.MapHeader(6);
    ctx.reply.Bulk("direction");
    ctx.reply.Bulk(link.direction);
    ctx.reply.Bulk("node");
    ctx.reply.Bulk(link.node_id);
    ctx.reply.Bulk("create-time");
    ctx.reply.Integer(link.create_time_ms);
    ctx.reply.Bulk("events");
    ctx.reply.Bulk(link.events);
    ctx.reply.Bulk("send-buffer-allocated");
    ctx.reply.Integer(static_cast<int64_t>(link.send_buffer_allocated));
    ctx.reply.Bulk("send-buffer-used");
    ctx.reply.Integer(static_cast<int64_t>(link.send_buffer_used));
  }
}

}  // namespace

std::vector<CommandSpec> ClusterBusSubcommands() {
  constexpr uint32_t kAdmin = kCmdAdmin | kCmdStale;
  constexpr std::string_view kGroup = "cluster";
  return {
      {.name = "meet", .arity = -4, .max_args = 5, .flags = kAdmin, .handler = CmdClusterMeet,
       .summary = "Forces a node to handshake with another node", .group = kGroup,
       .since = "3.0.0"},
      {.name = "forget", .arity = 3, .flags = kAdmin, .handler = CmdClusterForget,
       .summary = "Removes a node from the nodes table", .group = kGroup, .since = "3.0.0"},
      {.name = "links", .arity = 2, .flags = kCmdStale, .handler = CmdClusterLinks,
       .summary = "Returns a list of all TCP links to and from peer nodes in cluster",
       .group = kGroup, .since = "7.0.0"},
  };
}

}  // namespace bloomgate
