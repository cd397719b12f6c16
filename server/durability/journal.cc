#include "server/durability/journal.h"

#include <algorithm>
#include <string>

#include "persistence/append_log.h"
#include "persistence/filter_codec.h"

namespace bloomgate {

template <typename Each>
void Journal::ForEachSubscriber(Each&& each) const {
  for (const std::atomic<JournalSubscriber*>& slot : slots_) {
    if (JournalSubscriber* subscriber = slot.load(std::memory_order_acquire)) each(subscriber);
  }
}

bool Journal::Subscribe(JournalSubscriber* subscriber) { return Join(subscriber).has_value(); }

std::optional<uint64_t> Journal::Join(JournalSubscriber* subscriber,
                                      const std::function<void(uint64_t next_offset)>& at) {
  std::lock_guard lock(publish_mutex_);
  for (std::atomic<JournalSubscriber*>& slot : slots_) {
    if (slot.load(std::memory_order_relaxed) != nullptr) continue;
    slot.store(subscriber, std::memory_order_release);
    if (at) at(next_offset_);
    return next_offset_;
  }
  return std::nullopt;
}

void Journal::Unsubscribe(JournalSubscriber* subscriber) {
  std::lock_guard lock(publish_mutex_);
  for (std::atomic<JournalSubscriber*>& slot : slots_) {
    if (slot.load(std::memory_order_relaxed) == subscriber) {
      slot.store(nullptr, std::memory_order_release);
    }
  }
}

bool Journal::active() const {
  bool any = false;
  ForEachSubscriber([&any](const JournalSubscriber* subscriber) {
    any = any || subscriber->accepting();
  });
  return any;
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
  Take(session, record);
}

void Journal::RecordFilter(JournalSession& session, int64_t time_ms, std::string_view key,
                           const AnyFilter& filter, bool with_payload) {
  if (!session.policy().journaled || !active()) return;
  std::string record;
  EncodeFilterRecord(time_ms, key, DescribeFilter(filter), with_payload ? &filter : nullptr,
                     &record);
  Take(session, record);
}

void Journal::RecordFilterHeader(JournalSession& session, int64_t time_ms, std::string_view key,
                                 const FilterHeader& header) {
  if (!session.policy().journaled || !active()) return;
  std::string record;
  EncodeFilterRecord(time_ms, key, header, nullptr, &record);
  Take(session, record);
}

void Journal::Take(JournalSession& session, std::string_view bytes) {
  if (!session.gathering) {
    Publish(session, bytes);
    return;
  }
  if (bytes.empty()) return;  // see Publish
  session.unit.append(bytes);
  ++session.unit_records;
}

void Journal::BeginUnit(JournalSession& session) {
  session.gathering = true;
  session.unit.clear();
  session.unit_records = 0;
}

void Journal::EndUnit(JournalSession& session, int64_t time_ms) {
  session.gathering = false;
  std::string members = std::move(session.unit);
  const uint32_t count = session.unit_records;
  session.unit.clear();
  session.unit_records = 0;
  if (count == 0) return;
  if (count == 1) {
    Publish(session, members);
    return;
  }
  std::string unit;
  EncodeUnitRecord(time_ms, count, members, &unit);
  if (!unit.empty()) {
    Publish(session, unit);
    return;
  }
  // Past the framing's 4 GiB (EXEC's admission counts the commands, not the
  // filters a LOADCHUNK in it may store): its records go one by one, so
  // none is lost, and only a torn tail could split them.
  for (std::string_view member : SplitFramedRecords(members)) Publish(session, member);
}

void Journal::EndUnitAs(JournalSession& session, std::string_view bytes) {
  session.gathering = false;
  session.unit.clear();
  session.unit_records = 0;
  if (!bytes.empty()) Publish(session, bytes);
}

uint64_t Journal::UnitBodyBytes(uint64_t bodies, uint64_t count) {
  return UnitRecordBodyBytes(bodies + count * FramedRecordBytes(0));
}

void Journal::Publish(JournalSession& session, std::string_view bytes) {
  // An encoder appends nothing for a record the framing cannot hold; the
  // write was admitted by CanTake, so this is a caller that did not ask.
  if (bytes.empty()) return;
  std::lock_guard lock(publish_mutex_);
  next_offset_ += bytes.size();
  const JournalRecord record{.offset = next_offset_, .bytes = bytes};
  ForEachSubscriber([&record](JournalSubscriber* subscriber) {
    if (subscriber->accepting()) subscriber->OnRecord(record);
  });
  session.offset = next_offset_;
}

Status Journal::AwaitForReply(JournalSession& session) {
  if (session.offset == 0) return Status::Ok();
  const uint64_t offset = session.offset;
  session.offset = 0;
  return AwaitOffset(offset);
}

Status Journal::AwaitOffset(uint64_t offset) {
  Status result = Status::Ok();
  ForEachSubscriber([&](JournalSubscriber* subscriber) {
    if (result.ok() && subscriber->acknowledges()) result = subscriber->AwaitOffset(offset);
  });
  return result;
}

void Journal::AtBarrier(const std::function<void(uint64_t next_offset)>& at) {
  std::lock_guard lock(publish_mutex_);
  at(next_offset_);
}

uint64_t Journal::offset() const {
  std::lock_guard lock(publish_mutex_);
  return next_offset_;
}

void Journal::ReportUnapplied() {
  unapplied_records_.fetch_add(1, std::memory_order_relaxed);
}

bool Journal::needs_full_sync() const { return unapplied_records() > 0; }

uint64_t Journal::unapplied_records() const {
  return unapplied_records_.load(std::memory_order_relaxed);
}

}  // namespace bloomgate
