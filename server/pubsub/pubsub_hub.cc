#include "server/pubsub/pubsub_hub.h"

#include <algorithm>
#include <mutex>

#include "server/base/glob.h"

namespace bloomgate {

bool PubSubHub::Add(Index* index, Names* own,
                    const std::shared_ptr<Subscriber>& subscriber, std::string_view name) {
  if (!own->emplace(name).second) return false;
  auto it = index->find(name);
  if (it == index->end()) it = index->emplace(std::string(name), SubscriberList{}).first;
  it->second.push_back(subscriber);
  return true;
}

bool PubSubHub::Remove(Index* index, Names* own,
                       const Subscriber& subscriber, std::string_view name) {
  auto mine = own->find(name);
  if (mine == own->end()) return false;
  own->erase(mine);
  auto it = index->find(name);
  if (it != index->end()) {
    SubscriberList& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const auto& s) { return s.get() == &subscriber; }),
               list.end());
    // An empty entry goes, so PUBSUB CHANNELS and NUMPAT count live ones only.
    if (list.empty()) index->erase(it);
  }
  return true;
}

bool PubSubHub::Join(Index* index, Names Subscriber::*own,
                     const std::shared_ptr<Subscriber>& subscriber, std::string_view name) {
  std::unique_lock lock(mutex_);
  if (!Add(index, &((*subscriber).*own), subscriber, name)) return false;
  subscriptions_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool PubSubHub::Leave(Index* index, Names Subscriber::*own, Subscriber& subscriber,
                      std::string_view name) {
  std::unique_lock lock(mutex_);
  if (!Remove(index, &(subscriber.*own), subscriber, name)) return false;
  subscriptions_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

bool PubSubHub::Subscribe(const std::shared_ptr<Subscriber>& subscriber,
                          std::string_view channel) {
  return Join(&channels_, &Subscriber::channels_, subscriber, channel);
}

bool PubSubHub::Unsubscribe(Subscriber& subscriber, std::string_view channel) {
  return Leave(&channels_, &Subscriber::channels_, subscriber, channel);
}

bool PubSubHub::SubscribePattern(const std::shared_ptr<Subscriber>& subscriber,
                                 std::string_view pattern) {
  return Join(&patterns_, &Subscriber::patterns_, subscriber, pattern);
}

bool PubSubHub::UnsubscribePattern(Subscriber& subscriber, std::string_view pattern) {
  return Leave(&patterns_, &Subscriber::patterns_, subscriber, pattern);
}

std::vector<std::string> PubSubHub::UnsubscribeAll(Subscriber& subscriber) {
  std::vector<std::string> names(subscriber.channels_.begin(), subscriber.channels_.end());
  for (const std::string& name : names) Unsubscribe(subscriber, name);
  return names;
}

std::vector<std::string> PubSubHub::UnsubscribeAllPatterns(Subscriber& subscriber) {
  std::vector<std::string> names(subscriber.patterns_.begin(), subscriber.patterns_.end());
  for (const std::string& name : names) UnsubscribePattern(subscriber, name);
  return names;
}

int64_t PubSubHub::Publish(std::string_view channel, std::string_view message, uint64_t limit) {
  if (empty()) return 0;
  int64_t receivers = 0;
  std::shared_lock lock(mutex_);
  if (auto it = channels_.find(channel); it != channels_.end()) {
    for (const auto& subscriber : it->second) {
      subscriber->Deliver(/*pattern=*/nullptr, channel, message, limit);
      ++receivers;
    }
  }
  for (const auto& [pattern, subscribers] : patterns_) {
    if (!GlobMatch(pattern, channel)) continue;
    for (const auto& subscriber : subscribers) {
      subscriber->Deliver(&pattern, channel, message, limit);
      ++receivers;
    }
  }
  return receivers;
}

std::vector<std::string> PubSubHub::Channels(std::optional<std::string_view> pattern) const {
  std::vector<std::string> names;
  std::shared_lock lock(mutex_);
  for (const auto& [name, subscribers] : channels_) {
    if (!pattern || GlobMatch(*pattern, name)) names.push_back(name);
  }
  return names;
}

bool PubSubHub::EverySubscription(
    const Subscriber& subscriber,
    const std::function<bool(std::string_view, bool)>& allowed) const {
  std::shared_lock lock(mutex_);
  for (const std::string& channel : subscriber.channels_) {
    if (!allowed(channel, /*is_pattern=*/false)) return false;
  }
  for (const std::string& pattern : subscriber.patterns_) {
    if (!allowed(pattern, /*is_pattern=*/true)) return false;
  }
  return true;
}

size_t PubSubHub::NumSub(std::string_view channel) const {
  std::shared_lock lock(mutex_);
  auto it = channels_.find(channel);
  return it == channels_.end() ? 0 : it->second.size();
}

size_t PubSubHub::pattern_count() const {
  std::shared_lock lock(mutex_);
  return patterns_.size();
}

size_t PubSubHub::channel_count() const {
  std::shared_lock lock(mutex_);
  return channels_.size();
}

}  // namespace bloomgate
