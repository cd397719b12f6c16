#include "server/commands/registry.h"

#include <mutex>

#include "server/catalogue/command_table.h"
#include "server/catalogue/family_registry.h"

namespace bloomgate {

// Each is defined at the end of its group's or family's commands file.
std::vector<CommandSpec> ConnectionCommands();
std::vector<CommandSpec> IntrospectionCommands();
std::vector<CommandSpec> ServerCommands();
std::vector<CommandSpec> OperatorCommands();
std::vector<CommandSpec> KeyspaceCommands();
std::vector<CommandSpec> KeyInspectionCommands();
std::vector<CommandSpec> KeyCopyCommands();  // DUMP, RESTORE, COPY
std::vector<CommandSpec> MigrateCommands();  // MIGRATE
std::vector<CommandSpec> RestoreChunkCommands();  // RESTORE-CHUNK, MIGRATE's chunks
std::vector<CommandSpec> DebugCommands();    // DEBUG DIGEST-VALUE
std::vector<CommandSpec> TransactionCommands();
std::vector<CommandSpec> AclCommands();
std::vector<CommandSpec> HealthCommands();  // BLOOMGATE.HEALTH
std::vector<CommandSpec> PubSubCommands();  // (P)(UN)SUBSCRIBE, PUBLISH, PUBSUB
std::vector<CommandSpec> ReplicationCommands();  // REPLICAOF, ROLE, REPLCONF, PSYNC
std::vector<CommandSpec> ClusterCommands();  // CLUSTER, ASKING, READONLY, READWRITE
const FilterFamily& BloomFamily();
const FilterFamily& CountingBloomFamily();
const FilterFamily& CuckooFamily();
const FilterFamily& CountMinSketchFamily();
const FilterFamily& TopKFamily();
const FilterFamily& WindowedBloomFamily();
const FilterFamily& WindowedCountingBloomFamily();
const FilterFamily& TDigestFamily();

void RegisterAllCommands() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (CommandRows group : {ConnectionCommands, IntrospectionCommands, ServerCommands,
                              OperatorCommands, KeyspaceCommands, KeyInspectionCommands,
                              KeyCopyCommands, TransactionCommands, AclCommands, HealthCommands,
                              PubSubCommands, ReplicationCommands, MigrateCommands,
                              DebugCommands, ClusterCommands}) {
      RegisterCommandGroup(group);
    }
    RegisterCommandGroup(RestoreChunkCommands);
    RegisterFamily(BloomFamily());
    RegisterFamily(CountingBloomFamily());
    RegisterFamily(CuckooFamily());
    RegisterFamily(CountMinSketchFamily());
    RegisterFamily(TopKFamily());
    // After BloomFamily, whose BF.* rows serve it: FamilyOfGroup("bf") is Bloom's.
    RegisterFamily(WindowedBloomFamily());
    // After CountingBloomFamily, likewise for "cbf".
    RegisterFamily(WindowedCountingBloomFamily());
    RegisterFamily(TDigestFamily());
  });
}

}  // namespace bloomgate
