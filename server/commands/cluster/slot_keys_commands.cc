// CLUSTER COUNTKEYSINSLOT and CLUSTER GETKEYSINSLOT: what `redis-cli
// --cluster check` and `reshard` ask of every slot they look at or move,
// answered from the keyspace's per-slot index (keyspace/slot_index.h) in
// O(1) and O(count), with Redis 7.0's texts (cluster.c).
#include "server/commands/cluster/slot_keys_commands.h"

#include <string>
#include <vector>

#include "server/commands/arg_parser.h"
#include "server/commands/command_context.h"
#include "server/commands/errors.h"

namespace bloomgate {
namespace {

// The index, or null after failing the command: it exists only in cluster
// mode, where the CLUSTER container admits these rows at all.
const SlotIndex* SlotIndexOrFail(CommandContext& ctx) {
  const SlotIndex* index = ctx.server.keyspace.slot_index();
  if (index == nullptr) ctx.Fail(errors::kClusterDisabled);
  return index;
}

// CLUSTER COUNTKEYSINSLOT slot
void CmdClusterCountKeysInSlot(CommandContext& ctx) {
  int64_t slot = 0;
  if (!ParseInt64(ctx.args[2], &slot)) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  if (slot < 0 || slot >= static_cast<int64_t>(kClusterSlots)) {
    ctx.Fail(errors::kSlotKeysInvalidSlot);
    return;
  }
  const SlotIndex* index = SlotIndexOrFail(ctx);
  if (index == nullptr) return;
  ctx.reply.Integer(static_cast<int64_t>(index->CountKeysInSlot(static_cast<uint32_t>(slot))));
}

// CLUSTER GETKEYSINSLOT slot count
void CmdClusterGetKeysInSlot(CommandContext& ctx) {
  int64_t slot = 0;
  int64_t count = 0;
  // Redis parses the slot first, then the count, and judges both at once.
  if (!ParseInt64(ctx.args[2], &slot) || !ParseInt64(ctx.args[3], &count)) {
    ctx.Fail(errors::kNotInteger);
    return;
  }
  if (slot < 0 || slot >= static_cast<int64_t>(kClusterSlots) || count < 0) {
    ctx.Fail(errors::kSlotKeysInvalidSlotOrCount);
    return;
  }
  const SlotIndex* index = SlotIndexOrFail(ctx);
  if (index == nullptr) return;
  const std::vector<std::string> keys =
      index->KeysInSlot(static_cast<uint32_t>(slot), static_cast<size_t>(count));
  ctx.reply.ArrayHeader(keys.size());
  for (const std::string& key : keys) ctx.reply.Bulk(key);
}

}  // namespace

std::vector<CommandSpec> ClusterSlotKeysSubcommands() {
  return {
      {.name = "countkeysinslot", .arity = 3, .flags = kCmdReadOnly | kCmdStale,
       .handler = CmdClusterCountKeysInSlot,
       .summary = "Returns the number of keys in a hash slot", .group = "cluster",
       .since = "3.0.0"},
      {.name = "getkeysinslot", .arity = 4, .flags = kCmdReadOnly | kCmdStale,
       .handler = CmdClusterGetKeysInSlot, .summary = "Returns the key names in a hash slot",
       .group = "cluster", .since = "3.0.0"},
  };
}

}  // namespace bloomgate
