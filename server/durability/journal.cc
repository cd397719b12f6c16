#include "server/durability/journal.h"

#include <algorithm>


namespace bloomgate {

void Journal::Subscribe(JournalSubscriber* subscriber) {
  std::lock_guard lock(subscribe_mutex_);
  subscribers_.push_back(subscriber);
}

void Journal::Unsubscribe(JournalSubscriber* subscriber) {
  std::lock_guard lock(subscribe_mutex_);
  std::erase(subscribers_, subscriber);
}

bool Journal::active() const {
  return std::any_of(subscribers_.begin(), subscribers_.end(),
                     [](const JournalSubscriber* subscriber) { return subscriber->accepting(); });
}

void Journal::RecordCommand(JournalSession& session, int64_t time_ms,
                            std::span<const std::string_view> args) {
  if (session.replaying) return;
  for (JournalSubscriber* subscriber : subscribers_) {
    if (subscriber->accepting()) subscriber->OnCommand(session, time_ms, args);
  }
}

void Journal::RecordFilter(JournalSession& session, int64_t time_ms, std::string_view key,
                           const AnyFilter& filter, bool with_payload) {
  if (session.replaying) return;
  for (JournalSubscriber* subscriber : subscribers_) {
    if (subscriber->accepting()) subscriber->OnFilter(session, time_ms, key, filter, with_payload);
  }
}

}  // namespace bloomgate
