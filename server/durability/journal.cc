#include "server/durability/journal.h"

#include <algorithm>
#include <string>

#include "persistence/append_log.h"
#include "persistence/filter_codec.h"

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

bool Journal::CanTake(const JournalSession& session, uint64_t body_bytes) const {
  if (!session.policy().journaled || !active()) return true;
  return body_bytes <= kMaxLogRecordBodyBytes;
}

void Journal::RecordCommand(JournalSession& session, int64_t time_ms,
                            std::span<const std::string_view> args) {
  if (!session.policy().journaled || !active()) return;
  std::string record;
  EncodeCommandRecord(time_ms, args, &record);
  Publish(session, record);
}

void Journal::RecordFilter(JournalSession& session, int64_t time_ms, std::string_view key,
                           const AnyFilter& filter, bool with_payload) {
  if (!session.policy().journaled || !active()) return;
  std::string record;
  EncodeFilterRecord(time_ms, key, DescribeFilter(filter), with_payload ? &filter : nullptr,
                     &record);
  Publish(session, record);
}

void Journal::Publish(JournalSession& session, std::string_view bytes) {
  // An encoder appends nothing for a record the framing cannot hold; the
  // write was admitted by CanTake, so this is a caller that did not ask.
  if (bytes.empty()) return;
  std::lock_guard lock(publish_mutex_);
  next_offset_ += bytes.size();
  const JournalRecord record{.offset = next_offset_, .bytes = bytes};
  for (JournalSubscriber* subscriber : subscribers_) {
    if (subscriber->accepting()) subscriber->OnRecord(record);
  }
  session.offset = next_offset_;
}

Status Journal::AwaitForReply(JournalSession& session) {
  if (session.offset == 0) return Status::Ok();
  const uint64_t offset = session.offset;
  session.offset = 0;
  return AwaitOffset(offset);
}

Status Journal::AwaitOffset(uint64_t offset) {
  for (JournalSubscriber* subscriber : subscribers_) {
    if (!subscriber->acknowledges()) continue;
    if (Status status = subscriber->AwaitOffset(offset); !status.ok()) return status;
  }
  return Status::Ok();
}

void Journal::AtBarrier(const std::function<void(uint64_t next_offset)>& at) {
  std::lock_guard lock(publish_mutex_);
  at(next_offset_);
}

uint64_t Journal::offset() const {
  std::lock_guard lock(publish_mutex_);
  return next_offset_;
}

}  // namespace bloomgate
