#include "server/keyspace/slot_index.h"

namespace bloomgate {

void SlotIndex::Add(const std::string* name) {
  const uint32_t slot = KeySlot(*name);
  std::lock_guard lock(LockOf(slot));
  slots_[slot].insert(name);
}

void SlotIndex::Remove(const std::string* name) {
  const uint32_t slot = KeySlot(*name);
  std::lock_guard lock(LockOf(slot));
  slots_[slot].erase(name);
}

void SlotIndex::Clear() {
  for (uint32_t slot = 0; slot < kClusterSlots; ++slot) {
    std::lock_guard lock(LockOf(slot));
    std::unordered_set<const std::string*>().swap(slots_[slot]);
  }
}

size_t SlotIndex::CountKeysInSlot(uint32_t slot) const {
  std::lock_guard lock(LockOf(slot));
  return slots_[slot].size();
}

std::vector<std::string> SlotIndex::KeysInSlot(uint32_t slot, size_t count) const {
  std::vector<std::string> keys;
  std::lock_guard lock(LockOf(slot));
  const auto& names = slots_[slot];
  keys.reserve(std::min(count, names.size()));
  for (auto it = names.begin(); it != names.end() && keys.size() < count; ++it) {
    keys.push_back(**it);
  }
  return keys;
}

size_t SlotIndex::Size() const {
  size_t total = 0;
  for (uint32_t slot = 0; slot < kClusterSlots; ++slot) total += CountKeysInSlot(slot);
  return total;
}

}  // namespace bloomgate
