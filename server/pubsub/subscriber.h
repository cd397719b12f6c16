// One pub/sub client: the channels and patterns it subscribed to, and the
// inbox that messages published on any thread wait in until its connection's
// loop takes them.
//
// A publisher never writes another loop's socket: it formats the frame for
// this subscriber's protocol, appends it under the inbox's mutex and asks the
// connection's loop (once until it is drained) to take what arrived. An
// inbox past client-output-buffer-limit keeps nothing more and is marked
// overflowed; its connection closes when it drains, as Redis closes a client
// over its limit, so a subscriber that never reads holds at most the limit.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace bloomgate {

class Subscriber {
 public:
  // `wake` only posts to the connection's loop (it runs on the publisher's
  // thread); empty in tests that drain by hand.
  explicit Subscriber(std::function<void()> wake) : wake_(std::move(wake)) {}

  // RESP3 gets push frames ('>'), RESP2 arrays; HELLO may switch it at any
  // time, so the connection keeps this current.
  void set_resp3(bool resp3) { resp3_.store(resp3, std::memory_order_relaxed); }
  bool resp3() const { return resp3_.load(std::memory_order_relaxed); }

  // On any thread: ["message", channel, payload], or with a pattern (null:
  // none) ["pmessage", pattern, channel, payload].
  void Deliver(const std::string* pattern, std::string_view channel,
               std::string_view payload, uint64_t limit);
  // On the connection's loop: every frame delivered since the last Take.
  std::string Take(bool* overflowed);

  // The subscriptions, changed by PubSubHub on the owning connection's loop
  // only, and read there (confirmation counts) or under the hub's lock.
  const std::set<std::string, std::less<>>& channels() const { return channels_; }
  const std::set<std::string, std::less<>>& patterns() const { return patterns_; }
  // What SUBSCRIBE's confirmations count: channels plus patterns.
  size_t count() const { return channels_.size() + patterns_.size(); }

 private:
  friend class PubSubHub;

  std::atomic<bool> resp3_{false};
  std::set<std::string, std::less<>> channels_;
  std::set<std::string, std::less<>> patterns_;

  std::mutex mutex_;
  std::string pending_;  // guarded by mutex_
  bool wake_posted_ = false;
  bool overflowed_ = false;
  std::function<void()> wake_;
};

}  // namespace bloomgate
