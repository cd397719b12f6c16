#include "server/commands/cluster/cluster_commands.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "server/base/key_slot.h"
#include "server/cluster/cluster_state.h"
#include "server/commands/arg_parser.h"
#include "server/commands/cluster/cluster_bus_commands.h"
#include "server/commands/cluster/cluster_failover_command.h"
#include "server/commands/cluster/slot_keys_commands.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"
#include "server/commands/server/container_help.h"
#include "server/replication/replication.h"

namespace bloomgate {
namespace {

// A slot argument, as Redis's getSlotOrReply: an integer in [0, 16383].
bool ParseSlot(std::string_view text, int* slot) {
  int64_t value = 0;
  if (!ParseInt64(text, &value) || value < 0 || value >= static_cast<int64_t>(kClusterSlots)) {
    return false;
  }
  *slot = static_cast<int>(value);
  return true;
}

// Keys stored in `slot`: the per-slot key index's count, which cluster mode
// always keeps (main.cc); a walk of the keyspace only where a test built the
// state without it.
size_t KeysInSlot(ServerContext& server, int slot, int64_t now_ms) {
  if (const SlotIndex* index = server.keyspace.slot_index()) {
    return index->CountKeysInSlot(static_cast<uint32_t>(slot));
  }
  size_t count = 0;
  server.keyspace.ForEachKey("*", now_ms, [&](const std::string& key, const EntryPtr&) {
    if (KeySlot(key) == slot) ++count;
  });
  return count;
}

// Saves after a change made through Update; a save failure is logged by
// nobody else, so the client hears it (Redis would exit; the view in memory
// is right, only the file is behind, and SAVECONFIG retries).
void ReplyAfterChange(CommandContext& ctx, const std::string& save_error) {
  if (!save_error.empty()) {
    ctx.Fail(errors::ClusterSaveConfigFailed(save_error));
    return;
  }
  ctx.reply.Ok();
}

// CLUSTER INFO: Redis 7.0's fields, in its order.
void CmdClusterInfo(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  const ClusterView view = ctx.server.cluster.Snapshot();
  int assigned = 0, ok = 0, pfail = 0, fail = 0;
  for (size_t slot = 0; slot < kClusterSlots; ++slot) {
    const int32_t owner = view.owner[slot];
    if (owner == kNoNode) continue;
    ++assigned;
    const ClusterNode& node = view.nodes[static_cast<size_t>(owner)];
    if (node.Has(kNodeFail)) {
      ++fail;
    } else if (node.Has(kNodePFail)) {
      ++pfail;
    } else {
      ++ok;
    }
  }
  std::string text = "cluster_state:" + std::string(view.state_ok ? "ok" : "fail") + "\r\n";
  text += "cluster_slots_assigned:" + std::to_string(assigned) + "\r\n";
  text += "cluster_slots_ok:" + std::to_string(ok) + "\r\n";
  text += "cluster_slots_pfail:" + std::to_string(pfail) + "\r\n";
  text += "cluster_slots_fail:" + std::to_string(fail) + "\r\n";
  text += "cluster_known_nodes:" + std::to_string(view.nodes.size()) + "\r\n";
  text += "cluster_size:" + std::to_string(view.size) + "\r\n";
  text += "cluster_current_epoch:" + std::to_string(view.current_epoch) + "\r\n";
  text += "cluster_my_epoch:" + std::to_string(view.EpochOf(view.myself)) + "\r\n";
  // Only the message types seen, then the totals, as Redis prints them.
  const ClusterMessageCounters& counters = ctx.server.cluster.counters();
  for (bool sent : {true, false}) {
    uint64_t total = 0;
    for (size_t type = 0; type < static_cast<size_t>(ClusterMessageType::kCount); ++type) {
      const uint64_t count =
          (sent ? counters.sent : counters.received)[type].load(std::memory_order_relaxed);
      if (count == 0) continue;
      total += count;
      text += "cluster_stats_messages_" +
              std::string(ClusterMessageTypeName(static_cast<ClusterMessageType>(type))) +
              (sent ? "_sent:" : "_received:") + std::to_string(count) + "\r\n";
    }
    text += std::string("cluster_stats_messages_") + (sent ? "sent:" : "received:") +
            std::to_string(total) + "\r\n";
  }
  text += "total_cluster_links_buffer_limit_exceeded:" +
          std::to_string(counters.links_buffer_limit_exceeded.load(std::memory_order_relaxed)) +
          "\r\n";
  // Ours, after Redis's fields: nodes refused past kMaxClusterNodes.
  text += "cluster_nodes_refused:" +
          std::to_string(counters.nodes_refused.load(std::memory_order_relaxed)) + "\r\n";
  ctx.reply.Verbatim(text);
}

void CmdClusterNodes(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  ctx.reply.Verbatim(RenderClusterNodes(ctx.server.cluster.Snapshot()));
}

void CmdClusterMyId(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  ctx.reply.Bulk(ctx.server.cluster.my_id());
}

// Replicas of `master` that serve reads: not failed (Redis also leaves out
// one that has not finished its first sync, offset 0, where it knows).
std::vector<int32_t> ReplicasOf(const ClusterView& view, int32_t master) {
  std::vector<int32_t> replicas;
  const std::string& id = view.nodes[static_cast<size_t>(master)].id;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const ClusterNode& node = view.nodes[i];
    if (node.Has(kNodeSlave) && node.master_id == id) replicas.push_back(static_cast<int32_t>(i));
  }
  return replicas;
}

// CLUSTER REPLICATE id: this node becomes a replica of that master (Redis's
// clusterSetMaster): its open slots close, the view says `slave <id>` and
// the bus tells every peer at its next message; the replication room
// follows the master's address at once (the bus's cron again whenever that
// address changes). A master must hold no slot and no key.
void CmdClusterReplicate(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  const bool has_keys = ctx.server.keyspace.Size() != 0;
  std::string error;
  std::string host;
  uint16_t port = 0;
  const std::string save_error = ctx.server.cluster.Update([&](ClusterView& view) {
    const int32_t master = view.Find(ctx.args[2]);
    if (master == kNoNode) {
      error = errors::UnknownNode(ctx.args[2]);
      return false;
    }
    if (master == view.myself) {
      error = errors::kCantReplicateMyself;
      return false;
    }
    const ClusterNode& target = view.nodes[static_cast<size_t>(master)];
    if (target.Has(kNodeSlave)) {
      error = errors::kCanOnlyReplicateMaster;
      return false;
    }
    ClusterNode& me = view.me();
    if (me.Has(kNodeMaster) && (view.SlotCount(view.myself) != 0 || has_keys)) {
      error = errors::kReplicateNotEmpty;
      return false;
    }
    me.flags = (me.flags & ~kNodeMaster) | kNodeSlave;
    me.master_id = target.id;
    view.importing_from.fill(kNoNode);
    view.migrating_to.fill(kNoNode);
    host = target.ip;
    port = target.port;
    return true;
  });
  if (!error.empty()) {
    ctx.Fail(error);
    return;
  }
  if (!host.empty() && port != 0) ctx.server.replication->Follow(host, port);
  ReplyAfterChange(ctx, save_error);
}

// CLUSTER REPLICAS id (and CLUSTER SLAVES): the CLUSTER NODES lines of a
// master's replicas.
void CmdClusterReplicas(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  std::string error;
  std::vector<std::string> lines;
  ctx.server.cluster.Read([&](const ClusterView& view) {
    const int32_t master = view.Find(ctx.args[2]);
    if (master == kNoNode) {
      error = errors::UnknownNode(ctx.args[2]);
    } else if (view.nodes[static_cast<size_t>(master)].Has(kNodeSlave)) {
      error = errors::kNodeNotMaster;
    } else {
      for (int32_t replica : ReplicasOf(view, master)) {
        lines.push_back(RenderNodeLine(view, replica));
      }
    }
    return 0;
  });
  if (!error.empty()) {
    ctx.Fail(error);
    return;
  }
  ctx.reply.ArrayHeader(lines.size());
  for (const std::string& line : lines) ctx.reply.Bulk(line);
}

// [ip, port, id, {}]: the map holds endpoints other than the preferred one
// (Redis 7.0: the hostname, when one is set; Bloomgate announces none).
void ReplyNodeEndpoint(CommandContext& ctx, const ClusterNode& node) {
  ctx.reply.ArrayHeader(4);
  ctx.reply.Bulk(node.ip);
  ctx.reply.Integer(node.port);
  ctx.reply.Bulk(node.id);
  ctx.reply.MapHeader(0);
}

// CLUSTER SLOTS: one entry per run of slots with one owner.
void CmdClusterSlots(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  const ClusterView view = ctx.server.cluster.Snapshot();
  struct Run {
    size_t start, end;
    int32_t owner;
  };
  std::vector<Run> runs;
  for (size_t slot = 0; slot < kClusterSlots; ++slot) {
    const int32_t owner = view.owner[slot];
    if (owner == kNoNode) continue;
    if (!runs.empty() && runs.back().owner == owner && runs.back().end + 1 == slot) {
      runs.back().end = slot;
    } else {
      runs.push_back({slot, slot, owner});
    }
  }
  ctx.reply.ArrayHeader(runs.size());
  for (const Run& run : runs) {
    std::vector<int32_t> replicas;
    for (int32_t replica : ReplicasOf(view, run.owner)) {
      if (!view.nodes[static_cast<size_t>(replica)].Has(kNodeFail)) replicas.push_back(replica);
    }
    ctx.reply.ArrayHeader(3 + replicas.size());
    ctx.reply.Integer(static_cast<int64_t>(run.start));
    ctx.reply.Integer(static_cast<int64_t>(run.end));
    ReplyNodeEndpoint(ctx, view.nodes[static_cast<size_t>(run.owner)]);
    for (int32_t replica : replicas) ReplyNodeEndpoint(ctx, view.nodes[static_cast<size_t>(replica)]);
  }
}

// One node of a CLUSTER SHARDS entry: Redis 7.0's seven fields (7.0 adds a
// `hostname` only when one is set, and this node has none to set).
void ReplyShardNode(CommandContext& ctx, const ClusterView& view, int32_t index) {
  const ClusterNode& node = view.nodes[static_cast<size_t>(index)];
  const int64_t offset =
      index == view.myself
          ? static_cast<int64_t>(ctx.server.replication->master_repl_offset())
          : node.repl_offset;
  const bool replica = node.Has(kNodeSlave);
  ctx.reply.MapHeader(7);
  ctx.reply.Bulk("id");
  ctx.reply.Bulk(node.id);
  ctx.reply.Bulk("port");
  ctx.reply.Integer(node.port);
  ctx.reply.Bulk("ip");
  ctx.reply.Bulk(node.ip);
  ctx.reply.Bulk("endpoint");
  ctx.reply.Bulk(node.ip);
  ctx.reply.Bulk("role");
  ctx.reply.Bulk(replica ? "replica" : "master");
  ctx.reply.Bulk("replication-offset");
  ctx.reply.Integer(offset);
  ctx.reply.Bulk("health");
  ctx.reply.Bulk(node.Has(kNodeFail)          ? "fail"
                 : replica && offset == 0     ? "loading"
                                              : "online");
}

// CLUSTER SHARDS: one entry per master, its slot ranges as flat start/end
// pairs and its nodes (itself, then its replicas).
void CmdClusterShards(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  const ClusterView view = ctx.server.cluster.Snapshot();
  std::vector<int32_t> masters;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    if (view.nodes[i].Has(kNodeMaster)) masters.push_back(static_cast<int32_t>(i));
  }
  ctx.reply.ArrayHeader(masters.size());
  for (int32_t master : masters) {
    std::vector<int64_t> pairs;
    for (size_t slot = 0; slot < kClusterSlots; ++slot) {
      if (view.owner[slot] != master) continue;
      size_t end = slot;
      while (end + 1 < kClusterSlots && view.owner[end + 1] == master) ++end;
      pairs.push_back(static_cast<int64_t>(slot));
      pairs.push_back(static_cast<int64_t>(end));
      slot = end;
    }
    ctx.reply.MapHeader(2);
    ctx.reply.Bulk("slots");
    ctx.reply.ArrayHeader(pairs.size());
    for (int64_t value : pairs) ctx.reply.Integer(value);
    ctx.reply.Bulk("nodes");
    const std::vector<int32_t> replicas = ReplicasOf(view, master);
    ctx.reply.ArrayHeader(1 + replicas.size());
    ReplyShardNode(ctx, view, master);
    for (int32_t replica : replicas) ReplyShardNode(ctx, view, replica);
  }
}

void CmdClusterKeySlot(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  ctx.reply.Integer(KeySlot(ctx.args[2]));
}

// The slots named by ADDSLOTS/DELSLOTS (one per argument) or their RANGE
// forms (start/end pairs), checked as Redis checks them: every argument a
// slot, start <= end, each slot free (ADD) or assigned (DEL), none twice.
// The first problem is the reply; the view is changed only if there is none.
bool CollectSlots(CommandContext& ctx, const ClusterView& view, bool ranges, bool del,
                  std::vector<bool>* chosen, std::string* error) {
  const std::span<const std::string_view> args = ctx.args.subspan(2);
  auto check = [&](int start, int end) {
    for (int slot = start; slot <= end; ++slot) {
      if (del && view.owner[static_cast<size_t>(slot)] == kNoNode) {
        *error = errors::SlotAlreadyUnassigned(slot);
        return false;
      }
      if (!del && view.owner[static_cast<size_t>(slot)] != kNoNode) {
        *error = errors::SlotBusy(slot);
        return false;
      }
      if ((*chosen)[static_cast<size_t>(slot)]) {
        *error = errors::SlotSpecifiedTwice(slot);
        return false;
      }
      (*chosen)[static_cast<size_t>(slot)] = true;
    }
    return true;
  };
  if (!ranges) {
    // Redis parses every argument before it checks any slot.
    std::vector<int> slots(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (!ParseSlot(args[i], &slots[i])) {
        *error = errors::kInvalidSlot;
        return false;
      }
    }
    for (int slot : slots) {
      if (!check(slot, slot)) return false;
    }
    return true;
  }
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    int start = 0, end = 0;
    if (!ParseSlot(args[i], &start) || !ParseSlot(args[i + 1], &end)) {
      *error = errors::kInvalidSlot;
      return false;
    }
    if (start > end) {
      *error = errors::StartSlotAfterEnd(start, end);
      return false;
    }
    if (!check(start, end)) return false;
  }
  return true;
}

void ChangeSlots(CommandContext& ctx, bool ranges, bool del) {
  if (!ClusterEnabledOrFail(ctx)) return;
  if (ranges && ctx.args.size() % 2 == 1) {
    ctx.Fail(errors::WrongArity(ctx.spec.full_name));
    return;
  }
  std::string error;
  const std::string save_error = ctx.server.cluster.Update([&](ClusterView& view) {
    std::vector<bool> chosen(kClusterSlots, false);
    if (!CollectSlots(ctx, view, ranges, del, &chosen, &error)) return false;
    for (size_t slot = 0; slot < kClusterSlots; ++slot) {
      if (!chosen[slot]) continue;
      // Owning a slot ends importing it: this node is now its real owner.
      view.importing_from[slot] = kNoNode;
      view.owner[slot] = del ? kNoNode : view.myself;
    }
    return true;
  });
  if (!error.empty()) {
    ctx.Fail(error);
    return;
  }
  ReplyAfterChange(ctx, save_error);
}

void CmdClusterAddSlots(CommandContext& ctx) { ChangeSlots(ctx, /*ranges=*/false, /*del=*/false); }
void CmdClusterDelSlots(CommandContext& ctx) { ChangeSlots(ctx, /*ranges=*/false, /*del=*/true); }
void CmdClusterAddSlotsRange(CommandContext& ctx) { ChangeSlots(ctx, true, false); }
void CmdClusterDelSlotsRange(CommandContext& ctx) { ChangeSlots(ctx, true, true); }

void CmdClusterFlushSlots(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  if (ctx.server.keyspace.Size() != 0) {
    ctx.Fail(errors::kFlushSlotsNotEmpty);
    return;
  }
  ReplyAfterChange(ctx, ctx.server.cluster.Update([](ClusterView& view) {
    std::replace(view.owner.begin(), view.owner.end(), view.myself, kNoNode);
    return true;
  }));
}

// CLUSTER SETSLOT slot IMPORTING id | MIGRATING id | STABLE | NODE id,
// with Redis 7.0's checks in its order.
void CmdClusterSetSlot(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  ArgParser action(ctx.args, 3);
  const bool migrating = action.Accept("migrating");
  const bool importing = !migrating && action.Accept("importing");
  const bool stable = !migrating && !importing && action.Accept("stable");
  const bool node = !migrating && !importing && !stable && action.Accept("node");
  const size_t argc = ctx.args.size();
  int slot = 0;
  const bool slot_ok = ParseSlot(ctx.args[2], &slot);
  std::string error;
  // NODE counts the slot's keys inside the change, with every key locked
  // exclusively, so no command runs beside it: a write routed here before
  // the change cannot add a key after the count, which the slot given away
  // would orphan. Inside EXEC, the transaction took them all already (it
  // does when its queue holds an admin command: transaction_commands.cc).
  std::optional<KeyLocks::Guard> everything;
  if (node && !ctx.client.in_exec) {
    everything.emplace(ctx.server.key_locks.LockAll(/*exclusive=*/true));
  }
  const std::string save_error = ctx.server.cluster.Update([&](ClusterView& view) {
    const size_t keys_in_slot =
        node && argc == 5 && slot_ok ? KeysInSlot(ctx.server, slot, ctx.now_ms) : 0;
    if (node && setslot_node_counted_hook != nullptr) setslot_node_counted_hook();
    auto fail = [&](std::string text) {
      error = std::move(text);
      return false;
    };
    if (view.me().Has(kNodeSlave)) return fail(std::string(errors::kSetSlotOnlyMasters));
    if (!slot_ok) return fail(std::string(errors::kInvalidSlot));
    const size_t s = static_cast<size_t>(slot);
    const std::string_view id = argc == 5 ? ctx.args[4] : std::string_view();
    if (migrating && argc == 5) {
      if (view.owner[s] != view.myself) return fail(errors::NotSlotOwner(slot));
      const int32_t target = view.Find(id);
      if (target == kNoNode) return fail(errors::DontKnowNode(id));
      if (view.nodes[static_cast<size_t>(target)].Has(kNodeSlave)) {
        return fail(std::string(errors::kTargetNotMaster));
      }
      if (target == view.myself) return fail(errors::SlotMigratingToMyself(slot));
      view.migrating_to[s] = target;
    } else if (importing && argc == 5) {
      if (view.owner[s] == view.myself) return fail(errors::AlreadySlotOwner(slot));
      const int32_t source = view.Find(id);
      if (source == kNoNode) return fail(errors::DontKnowNode(id));
      if (view.nodes[static_cast<size_t>(source)].Has(kNodeSlave)) {
        return fail(std::string(errors::kTargetNotMaster));
      }
      if (source == view.myself) return fail(errors::SlotImportingFromMyself(slot));
      view.importing_from[s] = source;
    } else if (stable && argc == 4) {
      view.importing_from[s] = kNoNode;
      view.migrating_to[s] = kNoNode;
    } else if (node && argc == 5) {
      const int32_t target = view.Find(id);
      if (target == kNoNode) return fail(errors::UnknownNode(id));
      if (view.nodes[static_cast<size_t>(target)].Has(kNodeSlave)) {
        return fail(std::string(errors::kTargetNotMaster));
      }
      // Giving a slot away while its keys are still here would orphan them.
      if (view.owner[s] == view.myself && target != view.myself && keys_in_slot != 0) {
        return fail(errors::SlotStillHasKeys(slot));
      }
      if (keys_in_slot == 0) view.migrating_to[s] = kNoNode;
      view.owner[s] = target;
      // A slot imported by hand: a new epoch, so the cluster adopts this
      // owner over the old one's claim.
      if (target == view.myself && view.importing_from[s] != kNoNode) {
        view.BumpEpochWithoutConsensus();
        view.importing_from[s] = kNoNode;
      }
    } else {
      return fail(std::string(errors::kInvalidSetSlot));
    }
    return true;
  });
  if (!error.empty()) {
    ctx.Fail(error);
    return;
  }
  ReplyAfterChange(ctx, save_error);
}

// CLUSTER BUMPEPOCH: "BUMPED <epoch>" or "STILL <epoch>", a status reply.
void CmdClusterBumpEpoch(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  bool bumped = false;
  uint64_t epoch = 0;
  const std::string save_error = ctx.server.cluster.Update([&](ClusterView& view) {
    bumped = view.BumpEpochWithoutConsensus();
    epoch = view.me().config_epoch;
    return bumped;
  });
  if (!save_error.empty()) {
    ctx.Fail(errors::ClusterSaveConfigFailed(save_error));
    return;
  }
  ctx.reply.SimpleString((bumped ? "BUMPED " : "STILL ") + std::to_string(epoch));
}

// CLUSTER SET-CONFIG-EPOCH epoch: only on a node that knows no other and
// has epoch 0 (what `redis-cli --cluster create` sends each new master).
void CmdClusterSetConfigEpoch(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  int64_t epoch = 0;
  if (!ParseInt64(ctx.args[2], &epoch)) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  if (epoch < 0) {
    ctx.Fail(errors::InvalidConfigEpoch(ctx.args[2]));
    return;
  }
  std::string_view error;
  const std::string save_error = ctx.server.cluster.Update([&](ClusterView& view) {
    if (view.nodes.size() > 1) {
      error = errors::kConfigEpochOtherNodes;
      return false;
    }
    if (view.me().config_epoch != 0) {
      error = errors::kConfigEpochNonZero;
      return false;
    }
    view.me().config_epoch = static_cast<uint64_t>(epoch);
    view.current_epoch = std::max(view.current_epoch, static_cast<uint64_t>(epoch));
    return true;
  });
  if (!error.empty()) {
    ctx.Fail(error);
    return;
  }
  ReplyAfterChange(ctx, save_error);
}

// CLUSTER RESET [HARD|SOFT]: forget every other node and every slot; HARD
// also zeroes the epochs and takes a new id. A master holding keys refuses.
void CmdClusterReset(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  bool hard = false;
  if (ctx.args.size() == 3) {
    ArgParser mode(ctx.args, 2);
    if (mode.Accept("hard")) {
      hard = true;
    } else if (!mode.Accept("soft")) {
      ctx.Fail(errors::kSyntax);
      return;
    }
  }
  if (ctx.server.keyspace.Size() != 0 &&
      ctx.server.cluster.Read([](const ClusterView& view) { return view.me().Has(kNodeMaster); })) {
    ctx.Fail(errors::kResetWithKeys);
    return;
  }
  ReplyAfterChange(ctx, ctx.server.cluster.Update([&](ClusterView& view) {
    view.owner.fill(kNoNode);
    view.importing_from.fill(kNoNode);
    view.migrating_to.fill(kNoNode);
    for (int32_t i = static_cast<int32_t>(view.nodes.size()) - 1; i >= 0; --i) {
      if (i != view.myself) view.Remove(i);
    }
    ClusterNode& me = view.me();
    me.flags = (me.flags & ~(kNodeSlave | kNodePFail | kNodeFail)) | kNodeMaster;
    me.master_id.clear();
    me.failure_reports.clear();
    if (hard) {
      view.current_epoch = 0;
      view.last_vote_epoch = 0;
      me.config_epoch = 0;
      me.id = RandomNodeId();
    }
    return true;
  }));
}

void CmdClusterSaveConfig(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  ReplyAfterChange(ctx, ctx.server.cluster.Save());
}

// CLUSTER COUNT-FAILURE-REPORTS id: the reports other masters sent about
// it that are still valid (Redis: younger than twice cluster-node-timeout).
void CmdClusterCountFailureReports(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  const int64_t max_age_ms =
      2 * static_cast<int64_t>(ctx.server.config.Get().cluster_node_timeout);
  const int64_t count = ctx.server.cluster.Read([&](const ClusterView& view) -> int64_t {
    const int32_t index = view.Find(ctx.args[2]);
    if (index == kNoNode) return -1;
    const auto& reports = view.nodes[static_cast<size_t>(index)].failure_reports;
    return std::count_if(reports.begin(), reports.end(), [&](const auto& report) {
      return ctx.now_ms - report.second <= max_age_ms;
    });
  });
  if (count < 0) {
    ctx.Fail(errors::UnknownNode(ctx.args[2]));
    return;
  }
  ctx.reply.Integer(count);
}

void CmdClusterHelp(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  const std::vector<std::string> lines = ContainerHelpLines(*ctx.spec.parent);
  ctx.reply.ArrayHeader(lines.size());
  for (const std::string& line : lines) ctx.reply.SimpleString(line);
}

void CmdAsking(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  ctx.client.cluster_asking = true;
  ctx.reply.Ok();
}

void CmdReadOnly(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  ctx.client.cluster_readonly = true;
  ctx.reply.Ok();
}

void CmdReadWrite(CommandContext& ctx) {
  if (!ClusterEnabledOrFail(ctx)) return;
  ctx.client.cluster_readonly = false;
  ctx.reply.Ok();
}

}  // namespace

void (*setslot_node_counted_hook)() = nullptr;

bool ClusterEnabledOrFail(CommandContext& ctx) {
  if (ctx.server.cluster.enabled()) return true;
  ctx.Fail(errors::kClusterDisabled);
  return false;
}

std::vector<CommandSpec> ClusterAdminSubcommands() {
  // Redis 7.0's flags: the reads run on a stale replica; what changes the
  // view is admin. Unlike Redis, every read of the view also answers while
  // the data loads (Redis: only SLOTS and SHARDS). A replica's full sync
  // here streams straight into its keyspace, so its loading window is the
  // whole transfer, not a read of a file already received; and redis-cli
  // --cluster create --cluster-replicas reads every replica's CLUSTER NODES
  // right after its CLUSTER REPLICATE, failing the create on a -LOADING.
  constexpr uint32_t kRead = kCmdStale | kCmdLoading;
  constexpr uint32_t kAdmin = kCmdAdmin | kCmdStale;
  constexpr std::string_view kGroup = "cluster";
  return {
      {.name = "info", .arity = 2, .flags = kRead, .handler = CmdClusterInfo,
       .summary = "Returns information about the state of a node", .group = kGroup,
       .since = "3.0.0"},
      {.name = "nodes", .arity = 2, .flags = kRead, .handler = CmdClusterNodes,
       .summary = "Returns the cluster configuration for a node", .group = kGroup,
       .since = "3.0.0"},
      {.name = "myid", .arity = 2, .flags = kRead, .handler = CmdClusterMyId,
       .summary = "Returns the ID of a node", .group = kGroup, .since = "3.0.0"},
      {.name = "slots", .arity = 2, .flags = kRead, .handler = CmdClusterSlots,
       .summary = "Returns the mapping of cluster slots to nodes", .group = kGroup,
       .since = "3.0.0"},
      {.name = "shards", .arity = 2, .flags = kRead, .handler = CmdClusterShards,
       .summary = "Returns the mapping of cluster slots to shards", .group = kGroup,
       .since = "7.0.0"},
      {.name = "keyslot", .arity = 3, .flags = kRead, .handler = CmdClusterKeySlot,
       .summary = "Returns the hash slot for a key", .group = kGroup, .since = "3.0.0"},
      {.name = "addslots", .arity = -3, .flags = kAdmin, .handler = CmdClusterAddSlots,
       .summary = "Assigns new hash slots to a node", .group = kGroup, .since = "3.0.0"},
      {.name = "addslotsrange", .arity = -4, .flags = kAdmin, .handler = CmdClusterAddSlotsRange,
       .summary = "Assigns new hash slot ranges to a node", .group = kGroup, .since = "7.0.0"},
      {.name = "delslots", .arity = -3, .flags = kAdmin, .handler = CmdClusterDelSlots,
       .summary = "Sets hash slots as unbound for a node", .group = kGroup, .since = "3.0.0"},
      {.name = "delslotsrange", .arity = -4, .flags = kAdmin, .handler = CmdClusterDelSlotsRange,
       .summary = "Sets hash slot ranges as unbound for a node", .group = kGroup,
       .since = "7.0.0"},
      {.name = "flushslots", .arity = 2, .flags = kAdmin, .handler = CmdClusterFlushSlots,
       .summary = "Deletes all slots information from a node", .group = kGroup,
       .since = "3.0.0"},
      {.name = "setslot", .arity = -4, .max_args = 5, .flags = kAdmin,
       .handler = CmdClusterSetSlot, .summary = "Binds a hash slot to a node", .group = kGroup,
       .since = "3.0.0"},
      {.name = "bumpepoch", .arity = 2, .flags = kAdmin, .handler = CmdClusterBumpEpoch,
       .summary = "Advances the cluster config epoch", .group = kGroup, .since = "3.0.0"},
      {.name = "set-config-epoch", .arity = 3, .flags = kAdmin,
       .handler = CmdClusterSetConfigEpoch, .summary = "Sets the configuration epoch for a new node",
       .group = kGroup, .since = "3.0.0"},
      {.name = "reset", .arity = -2, .max_args = 3, .flags = kAdmin | kCmdNoScript,
       .handler = CmdClusterReset, .summary = "Resets a node", .group = kGroup,
       .since = "3.0.0"},
      {.name = "saveconfig", .arity = 2, .flags = kAdmin, .handler = CmdClusterSaveConfig,
       .summary = "Forces a node to save the cluster configuration to disk", .group = kGroup,
       .since = "3.0.0"},
      {.name = "replicate", .arity = 3, .flags = kAdmin, .handler = CmdClusterReplicate,
       .summary = "Configure a node as replica of a master node", .group = kGroup,
       .since = "3.0.0"},
      {.name = "replicas", .arity = 3, .flags = kAdmin, .handler = CmdClusterReplicas,
       .summary = "Lists the replica nodes of a master node", .group = kGroup,
       .since = "5.0.0"},
      {.name = "slaves", .arity = 3, .flags = kAdmin, .handler = CmdClusterReplicas,
       .summary = "Lists the replica nodes of a master node", .group = kGroup,
       .since = "3.0.0"},
      {.name = "count-failure-reports", .arity = 3, .flags = kAdmin,
       .handler = CmdClusterCountFailureReports,
       .summary = "Returns the number of active failure reports active for a node",
       .group = kGroup, .since = "3.0.0"},
  };
}

std::vector<CommandSpec> ClusterCommands() {
  std::vector<CommandSpec> subcommands = ClusterAdminSubcommands();
  // Other rooms' CLUSTER rows join here, one line each.
  std::ranges::move(ClusterBusSubcommands(), std::back_inserter(subcommands));
  std::ranges::move(ClusterSlotKeysSubcommands(), std::back_inserter(subcommands));
  std::ranges::move(ClusterFailoverSubcommands(), std::back_inserter(subcommands));
  CommandSpec help = HelpSubcommand("cluster", "5.0.0");
  help.handler = CmdClusterHelp;
  subcommands.push_back(std::move(help));
  return {
      {.name = "cluster", .arity = -2, .summary = "A container for Redis Cluster commands",
       .group = "cluster", .since = "3.0.0", .subcommands = std::move(subcommands)},
      {.name = "asking", .arity = 1, .flags = kCmdFast, .handler = CmdAsking,
       .summary = "Signals that a cluster client is following an -ASK redirect",
       .group = "cluster", .since = "3.0.0"},
      {.name = "readonly", .arity = 1, .flags = kCmdFast | kCmdLoading | kCmdStale,
       .handler = CmdReadOnly,
       .summary = "Enables read-only queries for a connection to a Redis Cluster replica node",
       .group = "cluster", .since = "3.0.0"},
      {.name = "readwrite", .arity = 1, .flags = kCmdFast | kCmdLoading | kCmdStale,
       .handler = CmdReadWrite,
       .summary = "Enables read-write queries for a connection to a Redis Cluster replica node",
       .group = "cluster", .since = "3.0.0"},
  };
}

}  // namespace bloomgate
