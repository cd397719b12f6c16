// Redis Cluster's epoch rules as pure functions (cluster.c's
// clusterUpdateSlotsConfigWith, clusterHandleConfigEpochCollision and the
// currentEpoch update in clusterProcessPacket), so the bus applies them and
// the tests pin them without a network.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate {

// Whether a claim on a slot at `claim_epoch` takes it from its current owner:
// an unowned slot goes to any claim; an owned one only to a claim whose
// config epoch is strictly higher than its owner's (equal epochs are settled
// by the collision rule first, never by arrival order).
bool SlotClaimWins(bool slot_owned, uint64_t owner_config_epoch, uint64_t claim_epoch);

// currentEpoch follows the highest epoch seen.
uint64_t NextCurrentEpoch(uint64_t current_epoch, uint64_t seen_epoch);

struct EpochCollisionOutcome {
  bool bumped = false;
  uint64_t current_epoch = 0;
  uint64_t config_epoch = 0;  // myself's, after the rule
};

// Two masters with the same config epoch: the one whose id is
// lexicographically smaller takes currentEpoch + 1 as both its currentEpoch
// and its config epoch; the other does nothing. After a round of such bumps
// every master has a distinct config epoch, whatever `create` assigned.
EpochCollisionOutcome ResolveConfigEpochCollision(std::string_view my_id, bool i_am_master,
                                                  uint64_t my_config_epoch,
                                                  uint64_t current_epoch,
                                                  std::string_view sender_id,
                                                  bool sender_is_master,
                                                  uint64_t sender_config_epoch);

}  // namespace bloomgate
