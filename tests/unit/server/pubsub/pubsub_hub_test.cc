#include "server/pubsub/pubsub_hub.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <memory>
#include <thread>
#include <vector>

#include "config/keyspace_events.h"
#include "server/pubsub/keyspace_notifier.h"

namespace bloomgate {
namespace {

constexpr uint64_t kLimit = 1 << 20;

std::string Taken(Subscriber& subscriber, bool* overflowed = nullptr) {
  bool ignored = false;
  return subscriber.Take(overflowed != nullptr ? overflowed : &ignored);
}

TEST(PubSubHub, PublishCountsEachChannelAndPatternSubscription) {
  PubSubHub hub;
  auto both = std::make_shared<Subscriber>(nullptr);
  auto channel_only = std::make_shared<Subscriber>(nullptr);
  EXPECT_TRUE(hub.Subscribe(both, "news"));
  EXPECT_FALSE(hub.Subscribe(both, "news"));
  EXPECT_TRUE(hub.SubscribePattern(both, "n*"));
  EXPECT_TRUE(hub.Subscribe(channel_only, "news"));
  EXPECT_EQ(both->count(), 2u);
  EXPECT_EQ(hub.Publish("news", "hi", kLimit), 3);
  EXPECT_EQ(Taken(*both),
            "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
            "*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n");
  EXPECT_EQ(Taken(*channel_only), "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n");
  EXPECT_EQ(hub.Publish("other", "x", kLimit), 0);
  EXPECT_EQ(hub.NumSub("news"), 2u);
  EXPECT_EQ(hub.pattern_count(), 1u);
}

TEST(PubSubHub, Resp3SubscribersGetPushFrames) {
  PubSubHub hub;
  auto subscriber = std::make_shared<Subscriber>(nullptr);
  subscriber->set_resp3(true);
  hub.Subscribe(subscriber, "c");
  hub.Publish("c", "m", kLimit);
  EXPECT_EQ(Taken(*subscriber), ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n");
}

TEST(PubSubHub, EmptyEntriesLeaveSoChannelsListsLiveOnes) {
  PubSubHub hub;
  auto a = std::make_shared<Subscriber>(nullptr);
  hub.Subscribe(a, "x");
  hub.Subscribe(a, "y");
  hub.SubscribePattern(a, "p*");
  EXPECT_EQ(hub.Channels(std::nullopt), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(hub.Channels(std::string_view("y*")), (std::vector<std::string>{"y"}));
  EXPECT_EQ(hub.UnsubscribeAll(*a), (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(hub.Channels(std::nullopt).empty());
  EXPECT_FALSE(hub.empty());
  EXPECT_EQ(hub.UnsubscribeAllPatterns(*a), (std::vector<std::string>{"p*"}));
  EXPECT_TRUE(hub.empty());
  EXPECT_EQ(hub.pattern_count(), 0u);
  EXPECT_EQ(a->count(), 0u);
}

TEST(PubSubHub, InboxPastTheLimitKeepsNothingAndSaysSo) {
  PubSubHub hub;
  auto slow = std::make_shared<Subscriber>(nullptr);
  hub.Subscribe(slow, "c");
  const std::string payload(600, 'x');
  EXPECT_EQ(hub.Publish("c", payload, /*limit=*/1000), 1);
  EXPECT_EQ(hub.Publish("c", payload, /*limit=*/1000), 1);  // still counted, as Redis
  bool overflowed = false;
  EXPECT_EQ(Taken(*slow, &overflowed), "");
  EXPECT_TRUE(overflowed);
}

TEST(PubSubHub, WakeIsAskedOnceUntilTheInboxIsDrained) {
  PubSubHub hub;
  int wakes = 0;
  auto subscriber = std::make_shared<Subscriber>([&] { ++wakes; });
  hub.Subscribe(subscriber, "c");
  hub.Publish("c", "1", kLimit);
  hub.Publish("c", "2", kLimit);
  EXPECT_EQ(wakes, 1);
  Taken(*subscriber);
  hub.Publish("c", "3", kLimit);
  EXPECT_EQ(wakes, 2);
}

// Publishers on four threads, started together behind a barrier, each
// deliver to one subscriber: every message arrives, whole, and each
// publisher's in its own order.
TEST(PubSubHub, ConcurrentPublishersLoseNothing) {
  PubSubHub hub;
  auto subscriber = std::make_shared<Subscriber>(nullptr);
  hub.Subscribe(subscriber, "c");
  constexpr int kThreads = 4, kEach = 2000;
  std::barrier start(kThreads);
  std::atomic<int64_t> received{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kEach; ++i) {
        received += hub.Publish("c", std::to_string(t) + ":" + std::to_string(i), 1ull << 30);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(received.load(), kThreads * kEach);
  const std::string all = Taken(*subscriber);
  std::vector<int> next(kThreads, 0);
  size_t at = 0, frames = 0;
  const std::string head = "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$";
  while (at < all.size()) {
    ASSERT_EQ(all.compare(at, head.size(), head), 0) << "a torn frame at byte " << at;
    at += head.size();
    const size_t crlf = all.find("\r\n", at);
    const size_t len = std::stoul(all.substr(at, crlf - at));
    const std::string body = all.substr(crlf + 2, len);
    const int t = body[0] - '0';
    EXPECT_EQ(body.substr(2), std::to_string(next[t]++));
    at = crlf + 2 + len + 2;
    ++frames;
  }
  EXPECT_EQ(frames, static_cast<size_t>(kThreads * kEach));
}

TEST(KeyspaceNotifier, PublishesOnTheConfiguredChannelsOnly) {
  PubSubHub hub;
  auto subscriber = std::make_shared<Subscriber>(nullptr);
  hub.SubscribePattern(subscriber, "__key*__:*");
  PublishKeyspaceEvent(hub, kNotifyKeyevent | kNotifyGeneric, kNotifyGeneric, "del", "k", kLimit);
  EXPECT_EQ(Taken(*subscriber),
            "*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$18\r\n__keyevent@0__:del\r\n"
            "$1\r\nk\r\n");
  // The class is not configured: nothing.
  PublishKeyspaceEvent(hub, kNotifyKeyevent | kNotifyKeyspace | kNotifyGeneric, kNotifyExpired,
                       "expired", "k", kLimit);
  EXPECT_EQ(Taken(*subscriber), "");
  // K without E: only the keyspace channel.
  PublishKeyspaceEvent(hub, kNotifyKeyspace | kNotifyExpired, kNotifyExpired, "expired", "k",
                       kLimit);
  EXPECT_EQ(Taken(*subscriber),
            "*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$16\r\n__keyspace@0__:k\r\n"
            "$7\r\nexpired\r\n");
}

}  // namespace
}  // namespace bloomgate
