#include "server/commands/cluster/cluster_routing.h"

#include "server/base/key_slot.h"
#include "server/commands/errors.h"
#include "server/keyspace/key_ref.h"

namespace bloomgate {
namespace {

template <typename Visit>
void ForEachKey(std::span<const RoutedCommand> commands, Visit&& visit) {
  for (const RoutedCommand& command : commands) {
    CommandTable::ForEachKeyIndex(*command.spec, command.args,
                                  [&](size_t index) { visit(command.args[index]); });
  }
}

}  // namespace

bool ClusterServes(ServerContext& server, const ClientState& client,
                   std::span<const RoutedCommand> commands, int64_t now_ms, std::string* error) {
  // The slot of the first key; every other key must share it.
  std::string_view first_key;
  bool any_key = false;
  bool multiple_keys = false;
  bool cross_slot = false;
  uint16_t slot = 0;
  ForEachKey(commands, [&](std::string_view key) {
    if (cross_slot) return;
    if (!any_key) {
      any_key = true;
      first_key = key;
      slot = KeySlot(key);
      return;
    }
    if (key == first_key) return;
    if (KeySlot(key) != slot) {
      cross_slot = true;
    } else {
      multiple_keys = true;
    }
  });
  // Keyless commands (PING, INFO, CLUSTER ...) are never redirected.
  if (!any_key) return true;
  if (cross_slot) {
    *error = errors::kCrossSlot;
    return false;
  }
  bool write = false;
  for (const RoutedCommand& command : commands) write |= (command.spec->flags & kCmdWrite) != 0;
  // RESTORE-ASKING is Redis's one command flagged ASKING: what MIGRATE sends.
  const bool asking = client.cluster_asking ||
                      (commands.size() == 1 && commands[0].spec->full_name == "restore-asking");
  const bool allow_reads_when_down = server.cluster.allow_reads_when_down();
  return server.cluster.Read([&](const ClusterView& view) {
    const int32_t owner = view.owner[slot];
    if (owner == kNoNode) {
      *error = errors::kSlotNotServed;
      return false;
    }
    const bool migrating = owner == view.myself && view.migrating_to[slot] != kNoNode;
    const bool importing = !migrating && view.importing_from[slot] != kNoNode;
    // A cluster down serves nothing, or with cluster-allow-reads-when-down
    // only reads (Redis 7.0's getNodeByQuery).
    if (!view.state_ok) {
      if (!allow_reads_when_down) {
        *error = errors::kClusterDown;
        return false;
      }
      if (write) {
        *error = errors::kClusterDownReadOnly;
        return false;
      }
    }
    // MIGRATE moves the keys of an open slot itself: it runs here, whichever
    // of them are still here (Redis's rule).
    if ((migrating || importing) && commands.size() == 1 &&
        commands[0].spec->full_name == "migrate") {
      return true;
    }
    size_t missing = 0, existing = 0;
    if (migrating || importing) {
      ForEachKey(commands, [&](std::string_view key) {
        if (server.keyspace.Peek(MakeKeyRef(key), now_ms) == nullptr) {
          ++missing;
        } else {
          ++existing;
        }
      });
    }
    auto redirect = [&](bool ask, int32_t to) {
      const ClusterNode& node = view.nodes[static_cast<size_t>(to)];
      *error = errors::ClusterRedirect(ask, slot, node.ip, node.port);
      return false;
    };
    if (migrating && missing > 0) {
      // Some keys already moved: the client must retry once all have.
      if (existing > 0) {
        *error = errors::kTryAgain;
        return false;
      }
      return redirect(/*ask=*/true, view.migrating_to[slot]);
    }
    if (importing && asking) {
      if (multiple_keys && missing > 0) {
        *error = errors::kTryAgain;
        return false;
      }
      return true;
    }
    // A replica serves reads of its master's slots to READONLY clients.
    const ClusterNode& me = view.me();
    if (client.cluster_readonly && !write && me.Has(kNodeSlave) &&
        me.master_id == view.nodes[static_cast<size_t>(owner)].id) {
      return true;
    }
    if (owner != view.myself) return redirect(/*ask=*/false, owner);
    return true;
  });
}

}  // namespace bloomgate
