// Striped reader/writer locks over key names, for transaction isolation.
//
// Every command holds its keys' stripes shared while it runs; EXEC holds the
// stripes of every key its queued commands touch exclusively, so no other
// client's command on those keys can interleave with the transaction, while
// commands on other keys go on. Filter bits themselves are never guarded by
// these locks (adds are lock-free); the locks only order whole commands.
//
// 1024 stripes: two keys share a stripe with probability 1/1024, which only
// costs a transaction some unneeded waiting, never correctness. Stripes are
// always taken in ascending order, so two lockers can never deadlock.
#pragma once

#include <array>
#include <cstdint>
#include <shared_mutex>
#include <string_view>
#include <vector>

#include "server/keyspace/key_ref.h"

namespace bloomgate {

class KeyLocks {
 public:
  static constexpr size_t kStripes = 1024;

  static size_t StripeOf(std::string_view key);
  static size_t StripeOf(const KeyRef& key) { return key.hash & (kStripes - 1); }

  // Holds a sorted, de-duplicated set of stripes until destroyed.
  class Guard {
   public:
    Guard() = default;
    Guard(KeyLocks* locks, std::vector<size_t> stripes, bool exclusive);
    Guard(Guard&& other) noexcept;
    Guard& operator=(Guard&&) = delete;
    ~Guard();

   private:
    KeyLocks* locks_ = nullptr;
    std::vector<size_t> stripes_;
    bool exclusive_ = false;
  };

  // `stripes` may be unsorted and hold duplicates.
  Guard Lock(std::vector<size_t> stripes, bool exclusive);
  Guard LockAll(bool exclusive);

 private:
  struct alignas(64) Stripe {
    std::shared_mutex mutex;
  };
  std::array<Stripe, kStripes> stripes_;
};

}  // namespace bloomgate
