// Every channel and pattern subscription of the server (Redis's
// server.pubsub_channels and server.pubsub_patterns), and PUBLISH.
//
// Subscriptions change on the subscribing connection's loop, under the
// hub's lock held exclusively; PUBLISH runs on the publisher's loop holding
// it shared and hands each receiver its frame through the receiver's inbox
// (subscriber.h), so no loop writes another's socket. Patterns are Redis's
// glob (stringmatch) over the channel name.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/pubsub/subscriber.h"

namespace bloomgate {

class PubSubHub {
 public:
  // Each returns whether the subscription changed (false: already
  // subscribed / was not subscribed), as Redis's pubsubSubscribeChannel.
  bool Subscribe(const std::shared_ptr<Subscriber>& subscriber, std::string_view channel);
  bool Unsubscribe(Subscriber& subscriber, std::string_view channel);
  bool SubscribePattern(const std::shared_ptr<Subscriber>& subscriber, std::string_view pattern);
  bool UnsubscribePattern(Subscriber& subscriber, std::string_view pattern);
  // Every channel (pattern) of `subscriber`, unsubscribed; returns their
  // names in the order the confirmations go out.
  std::vector<std::string> UnsubscribeAll(Subscriber& subscriber);
  std::vector<std::string> UnsubscribeAllPatterns(Subscriber& subscriber);

  // Delivers `message` to every subscriber of `channel` and to every
  // subscriber of each pattern that matches it; returns the receivers as
  // Redis counts them: one per channel subscription and one per matching
  // pattern subscription (a client on both counts twice).
  int64_t Publish(std::string_view channel, std::string_view message, uint64_t limit);

  // Whether `allowed(name, is_pattern)` holds for every channel and
  // pattern of `subscriber`, read under the hub's lock from any thread (ACL
  // SETUSER judging another loop's subscriber).
  bool EverySubscription(const Subscriber& subscriber,
                         const std::function<bool(std::string_view, bool)>& allowed) const;

  // PUBSUB CHANNELS [pattern]: channels with at least one subscriber.
  std::vector<std::string> Channels(std::optional<std::string_view> pattern) const;
  // PUBSUB NUMSUB: subscribers of one channel.
  size_t NumSub(std::string_view channel) const;
  // PUBSUB NUMPAT and INFO's pubsub_patterns: distinct patterns subscribed.
  size_t pattern_count() const;
  // INFO's pubsub_channels.
  size_t channel_count() const;
  // No subscription at all: one relaxed load, for keyspace notifications.
  bool empty() const { return subscriptions_.load(std::memory_order_relaxed) == 0; }

 private:
  using SubscriberList = std::vector<std::shared_ptr<Subscriber>>;
  using Index = std::map<std::string, SubscriberList, std::less<>>;
  using Names = std::set<std::string, std::less<>>;
  // `own` is the subscriber's matching set (channels_ or patterns_).
  bool Join(Index* index, Names Subscriber::*own, const std::shared_ptr<Subscriber>& subscriber,
            std::string_view name);
  bool Leave(Index* index, Names Subscriber::*own, Subscriber& subscriber,
             std::string_view name);
  static bool Add(Index* index, Names* own, const std::shared_ptr<Subscriber>& subscriber,
                  std::string_view name);
  static bool Remove(Index* index, Names* own, const Subscriber& subscriber,
                     std::string_view name);

  mutable std::shared_mutex mutex_;
  Index channels_;
  Index patterns_;
  std::atomic<size_t> subscriptions_{0};
};

}  // namespace bloomgate
