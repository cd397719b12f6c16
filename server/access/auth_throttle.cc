#include "server/access/auth_throttle.h"

#include <algorithm>

namespace bloomgate {

bool AuthThrottle::Allowed(std::string_view address, int64_t now_ms, int64_t* retry_after_ms) {
  std::lock_guard lock(mutex_);
  auto it = addresses_.find(std::string(address));
  if (it == addresses_.end() || it->second.refused_until_ms <= now_ms) return true;
  *retry_after_ms = it->second.refused_until_ms - now_ms;
  refused_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

uint32_t AuthThrottle::RecordFailure(std::string_view address, int64_t now_ms) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  if (address.empty()) return 0;  // an internal client (tests): counted only
  std::lock_guard lock(mutex_);
  auto it = addresses_.find(std::string(address));
  if (it == addresses_.end()) {
    if (addresses_.size() >= kMaxAddresses) DropOldestLocked();
    it = addresses_.emplace(std::string(address), Address{}).first;
  }
  Address& entry = it->second;
  if (now_ms - entry.last_failure_ms > kForgetAfterMs) entry = Address{};
  entry.last_failure_ms = now_ms;
  if (++entry.failures >= kFailuresBeforeBackoff) {
    entry.backoff_ms =
        entry.backoff_ms == 0 ? kFirstBackoffMs : std::min(entry.backoff_ms * 2, kMaxBackoffMs);
    entry.refused_until_ms = now_ms + entry.backoff_ms;
  }
  return entry.failures;
}

void AuthThrottle::RecordSuccess(std::string_view address) {
  std::lock_guard lock(mutex_);
  addresses_.erase(std::string(address));
}

void AuthThrottle::DropOldestLocked() {
  // O(n) over at most kMaxAddresses entries, only when a new address arrives
  // with the map full: a flood from that many addresses costs ~1 ms a failure.
  auto oldest = std::min_element(addresses_.begin(), addresses_.end(),
                                 [](const auto& a, const auto& b) {
                                   return a.second.last_failure_ms < b.second.last_failure_ms;
                                 });
  if (oldest != addresses_.end()) addresses_.erase(oldest);
}

std::string_view PeerAddress(std::string_view peer) {
  const size_t colon = peer.rfind(':');
  std::string_view host = colon == std::string_view::npos ? peer : peer.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace bloomgate
