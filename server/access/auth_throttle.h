// Slows password guessing down. Redis has no such limit: 20,000 wrong AUTHs
// on one connection took 0.04 s here, and the connection was never dropped.
//
// Two rules, neither of which parks an event loop:
//  - a connection is closed after kFailuresPerConnection wrong passwords in
//    a row (ClientState counts them; the connection counts as one guesser);
//  - a source address with kFailuresBeforeBackoff failures is refused for a
//    backoff that doubles from 1 s to 60 s with every further failure. While
//    refused, AUTH (and HELLO ... AUTH) from it is answered with an error
//    without looking at the password, so one address guesses at most once a
//    minute at the steady state, from however many connections. A correct
//    password resets the address; an address quiet for 10 minutes is forgotten.
// Thread-safe: one mutex around a map of at most kMaxAddresses entries (the
// oldest are dropped first), taken only by AUTH.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace bloomgate {

class AuthThrottle {
 public:
  static constexpr uint32_t kFailuresPerConnection = 10;
  static constexpr uint32_t kFailuresBeforeBackoff = 20;
  static constexpr int64_t kFirstBackoffMs = 1000;
  static constexpr int64_t kMaxBackoffMs = 60'000;
  static constexpr int64_t kForgetAfterMs = 10 * 60'000;
  static constexpr size_t kMaxAddresses = 65536;

  // Whether `address` may try a password now; if not, *retry_after_ms says
  // for how long it is refused (and the refusal is counted).
  bool Allowed(std::string_view address, int64_t now_ms, int64_t* retry_after_ms);
  // A wrong password from `address` ("" for a client with no address: only
  // counted); returns the address's failures so far.
  uint32_t RecordFailure(std::string_view address, int64_t now_ms);
  void RecordSuccess(std::string_view address);

  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  struct Address {
    uint32_t failures = 0;
    int64_t backoff_ms = 0;
    int64_t refused_until_ms = 0;
    int64_t last_failure_ms = 0;
  };
  void DropOldestLocked();

  std::mutex mutex_;
  std::unordered_map<std::string, Address> addresses_;  // guarded by mutex_
  // Relaxed: counts for INFO, guarding nothing.
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> refused_{0};
};

// The address part of a peer "ip:port" ("[::1]:6379" -> "::1").
std::string_view PeerAddress(std::string_view peer);

}  // namespace bloomgate
