#include "server/commands/cluster/cluster_failover_command.h"

#include <spdlog/spdlog.h>

#include <string>

#include "server/cluster_bus/cluster_bus.h"
#include "server/cluster_bus/replica_election.h"
#include "server/commands/arg_parser.h"
#include "server/commands/cluster/cluster_commands.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/replication/replication.h"

namespace bloomgate {
namespace {

enum class FailoverMode { kDefault, kForce, kTakeover };

// Redis's checks, in its order: a replica, its master known, and (but for
// FORCE and TAKEOVER) that master reachable: not fail? or fail, a link up.
std::string_view FailoverRefusal(const ClusterView& view, FailoverMode mode) {
  if (view.me().Has(kNodeMaster)) return errors::kFailoverOnMaster;
  const int32_t master = view.MasterOf(view.myself);
  if (master == kNoNode) return errors::kFailoverMasterUnknown;
  const ClusterNode& node = view.nodes[static_cast<size_t>(master)];
  if (mode == FailoverMode::kDefault &&
      (node.Has(kNodePFail) || node.Has(kNodeFail) || !node.link_connected)) {
    return errors::kFailoverMasterDown;
  }
  return {};
}

// TAKEOVER (Redis's clusterBumpConfigEpochWithoutConsensus then
// clusterFailoverReplaceYourMaster): no vote; a new config epoch of its own
// makes this node's claim win over its master's everywhere. The bus's cron
// sees the changed claim and PONGs every peer within a tick. The command
// checked the role already.
void TakeOver(CommandContext& ctx, ClusterBus& bus) {
  spdlog::warn("Taking over the master (user request).");
  // Replication first, as an election's winner does: a write routed here
  // once the view names this node master must not be refused as a replica's.
  ctx.server.replication->Unfollow();
  const std::string save_error = ctx.server.cluster.Update([](ClusterView& view) {
    if (view.MasterOf(view.myself) == kNoNode) return false;
    view.BumpEpochWithoutConsensus();
    return ReplaceMyMaster(&view, view.me().config_epoch);
  });
  bus.ResetManualFailover();
  if (!save_error.empty()) {
    ctx.Fail(errors::ClusterSaveConfigFailed(save_error));
    return;
  }
  ctx.reply.Ok();
}

void CmdClusterFailover(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  FailoverMode mode = FailoverMode::kDefault;
  if (ctx.args.size() == 3) {
    ArgParser option(ctx.args, 2);
    if (option.Accept("force")) {
      mode = FailoverMode::kForce;
    } else if (option.Accept("takeover")) {
      mode = FailoverMode::kTakeover;
    } else {
      ctx.Fail(errors::kSyntax);
      return;
    }
  }
  const std::string_view refusal = ctx.server.cluster.Read(
      [&](const ClusterView& view) { return FailoverRefusal(view, mode); });
  if (!refusal.empty()) {
    ctx.Fail(refusal);
    return;
  }
  ClusterBus* bus = CurrentClusterBus();
  if (bus == nullptr) {
    ctx.Fail(errors::kClusterBusDown);
    return;
  }
  if (mode == FailoverMode::kTakeover) {
    TakeOver(ctx, *bus);
    return;
  }
  spdlog::warn(mode == FailoverMode::kForce ? "Forced failover user request accepted."
                                            : "Manual failover user request accepted.");
  bus->StartManualFailover(/*force=*/mode == FailoverMode::kForce);
  ctx.reply.Ok();
}

}  // namespace

std::vector<CommandSpec> ClusterFailoverSubcommands() {
  return {
      {.name = "failover", .arity = -2, .max_args = 3, .flags = kCmdAdmin | kCmdStale,
       .handler = CmdClusterFailover,
       .summary = "Forces a replica to perform a manual failover of its master.",
       .group = "cluster", .since = "3.0.0"},
  };
}

}  // namespace bloomgate
