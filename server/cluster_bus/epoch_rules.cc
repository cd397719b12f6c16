#include "server/cluster_bus/epoch_rules.h"

namespace bloomgate {

bool SlotClaimWins(bool slot_owned, uint64_t owner_config_epoch, uint64_t claim_epoch) {
  return !slot_owned || claim_epoch > owner_config_epoch;
}

uint64_t NextCurrentEpoch(uint64_t current_epoch, uint64_t seen_epoch) {
  return seen_epoch > current_epoch ? seen_epoch : current_epoch;
}

EpochCollisionOutcome ResolveConfigEpochCollision(std::string_view my_id, bool i_am_master,
                                                  uint64_t my_config_epoch,
                                                  uint64_t current_epoch,
                                                  std::string_view sender_id,
                                                  bool sender_is_master,
                                                  uint64_t sender_config_epoch) {
  EpochCollisionOutcome out{false, current_epoch, my_config_epoch};
  if (!i_am_master || !sender_is_master || sender_config_epoch != my_config_epoch) return out;
  // The larger id keeps its epoch; ids are equal-length lowercase hex, so
  // byte order is Redis's memcmp order.
  if (sender_id <= my_id) return out;
  out.bumped = true;
  out.current_epoch = current_epoch + 1;
  out.config_epoch = out.current_epoch;
  return out;
}

}  // namespace bloomgate
