// The keys of each Redis Cluster hash slot (base/key_slot.h), so that
// CLUSTER COUNTKEYSINSLOT is O(1) and CLUSTER GETKEYSINSLOT s n costs O(n),
// not a walk of the keyspace: what resharding asks for every slot it moves.
//
// A set per slot of pointers to the names the keyspace's map nodes hold
// (nodes never move while their key exists), kept by the keyspace under the
// key's shard lock on every path that stores or removes a name. A slot's
// set has its own lock (one of kLockStripes), since the 64 shards split the
// keys by another hash and two shards may change one slot at once.
//
// Cost, measured by slot_index_test (SlotIndex.BytesPerKey, glibc malloc):
// 44 bytes a key (a 16-byte set node in a 32-byte malloc chunk, plus the
// sets' bucket arrays), plus ~0.9 MiB for the 16,384 empty sets. Kept only
// when cluster mode is on (Keyspace::EnableSlotIndex).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "server/base/key_slot.h"

namespace bloomgate {

class SlotIndex {
 public:
  // `name` must stay at its address until Remove(name).
  void Add(const std::string* name);
  void Remove(const std::string* name);
  void Clear();

  // Keys stored in `slot` (< kClusterSlots).
  size_t CountKeysInSlot(uint32_t slot) const;
  // Up to `count` of them (in no particular order), copied out.
  std::vector<std::string> KeysInSlot(uint32_t slot, size_t count) const;
  // Keys in every slot together.
  size_t Size() const;

 private:
  // 256 stripes: two shards meet on one only when their keys' slots share
  // the low 8 bits, and a stripe is held for one set operation.
  static constexpr size_t kLockStripes = 256;
  std::mutex& LockOf(uint32_t slot) const { return locks_[slot % kLockStripes]; }

  mutable std::array<std::mutex, kLockStripes> locks_;
  std::array<std::unordered_set<const std::string*>, kClusterSlots> slots_;
};

}  // namespace bloomgate
