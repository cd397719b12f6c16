// The journal: the one seam every acknowledged write passes through.
//
// A write publishes its record here AFTER it took effect and while it still
// holds its key locks, so the records of one key reach every subscriber in
// the order the writes took effect (CBF/CF writes and EXEC hold their keys
// exclusively; concurrent Bloom adds on one key commute once they are
// recorded as effects, see below). Subscribers: the append-only log
// (Durability) today; the replication stream and slot migration subscribe
// the same way, without touching a command handler.
//
// What a record says is what to REPLAY, never what the client asked:
//  - a command, for writes whose re-execution on the state they ran on gives
//    the same result (DEL, RENAME, PEXPIRE, CBF.* and CF.* writes...);
//  - an effect, in command form under a name that only the applier knows
//    (server/commands/journal_applier.h), for writes that could come out differently if
//    judged again. A Bloom add can be refused (NONSCALING capacity,
//    max-filter-memory, maxmemory, the layer limit), and concurrent adds on
//    one key run in any order, so re-running BF.MADD would judge capacity
//    again in another order: its record lists the items that WERE added,
//    and replaying it never refuses;
//  - a stored filter: a creation with its exact parameters (so replay never
//    depends on the defaults in force when it runs), or a LOADCHUNK'd filter
//    with its payload.
//
// The stream: every record published gets a byte offset, minted under the
// journal's one publish lock, so all keys share one total order and every
// subscriber sees the records in it. A record's bytes are the log's record
// framing (persistence/append_log.h), the wire format of every subscriber;
// its offset is the stream's byte count just past it (offsets start at 0
// with each start of the server). A client waits for "offset X satisfied":
// every subscriber that must acknowledge (the log's flush today, WAIT or
// min-replicas later) has it.
//
// Where a write comes from (JournalOrigin) decides how it is judged and
// whether it is journaled again (OriginPolicy, below).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "filters/any_filter.h"
#include "persistence/status.h"

namespace bloomgate {

struct FilterHeader;

// Where the writes of a session come from.
enum class JournalOrigin : uint8_t {
  kClient,         // a client connection
  kStartupReplay,  // the append-only log, replayed at start-up
  kReplication,    // a primary's stream, applied by a replica
};

// What each origin is spared or held to. One row per origin, so a new
// exemption is a decision per origin, never a side effect of another.
struct OriginPolicy {
  // Its writes are published to the stream. Start-up replay's are in the
  // log being replayed already; a replica's go to its own log and replicas.
  bool journaled;
  // Judged against the local limits (maxmemory, max-filter-memory, the
  // layer limit, the cuckoo copies rule...): Admission::kClient. Recorded
  // writes were judged where they ran and are applied as recorded.
  bool judged_by_limits;
  // ACL rules apply (a record passed them where it ran).
  bool checks_acl;
  // Runs at the time recorded with it (ClientState::replay_time_ms), so
  // EXPIRE and lazy expiry come out as they did; else at the clock.
  bool recorded_clock;
  // Refused with MISCONF once the log cannot be written.
  bool refused_on_log_failure;
  // Answered -LOADING while the data loads.
  bool refused_while_loading;
  // Held by CLIENT PAUSE (Redis never pauses its primary's link).
  bool pausable;
  // May park: wait off the event loop for a snapshot's copy or for a big
  // filter to be made. A stream is applied in order, inline.
  bool may_park;
  // Shown in SLOWLOG and to MONITOR clients.
  bool observed;
};

inline constexpr OriginPolicy kClientPolicy{
    .journaled = true, .judged_by_limits = true, .checks_acl = true, .recorded_clock = false,
    .refused_on_log_failure = true, .refused_while_loading = true, .pausable = true,
    .may_park = true, .observed = true};
inline constexpr OriginPolicy kStartupReplayPolicy{
    .journaled = false, .judged_by_limits = false, .checks_acl = false, .recorded_clock = true,
    .refused_on_log_failure = false, .refused_while_loading = false, .pausable = false,
    .may_park = false, .observed = false};
inline constexpr OriginPolicy kReplicationPolicy{
    .journaled = true, .judged_by_limits = false, .checks_acl = false, .recorded_clock = true,
    .refused_on_log_failure = true, .refused_while_loading = true, .pausable = false,
    .may_park = false, .observed = true};

constexpr const OriginPolicy& PolicyOf(JournalOrigin origin) {
  switch (origin) {
    case JournalOrigin::kStartupReplay: return kStartupReplayPolicy;
    case JournalOrigin::kReplication: return kReplicationPolicy;
    case JournalOrigin::kClient: break;
  }
  return kClientPolicy;
}

// What the journal keeps per client (it lives in ClientState).
struct JournalSession {
  JournalOrigin origin = JournalOrigin::kClient;
  // The stream offset just past this session's last published record: its
  // replies wait until it is satisfied (Journal::AwaitForReply). 0 = nothing
  // to wait for (a record's end offset is never 0).
  uint64_t offset = 0;
  // A transaction being gathered (Journal::BeginUnit): its records, framed,
  // published as one unit when it ends.
  bool gathering = false;
  uint32_t unit_records = 0;
  std::string unit;

  const OriginPolicy& policy() const { return PolicyOf(origin); }
};

// Effect names: args[0] of an effect record. The dot-separated prefix keeps
// them apart from every client command (a client sending one gets "unknown
// command"); the applier (server/commands/journal_applier.h) is the only place that runs them.
//
//   bloomgate.bf.added KEY COUNTED ITEM [ITEM ...]
//     Bloom adds that took effect on KEY's filter, in the order they were
//     applied. COUNTED holds one byte per ITEM: '1' when the add was counted
//     in the filter's items() (it was new), '0' when the filter already
//     reported the item. Replay adds every ITEM unconditionally
//     (ScalableBloomFilter::ReplayAdd).
inline constexpr std::string_view kBloomAddedEffect = "bloomgate.bf.added";
//
//   bloomgate.bf.wadded KEY FLAGS GENERATION ITEM [GENERATION ITEM ...]
//     Adds to KEY's windowed Bloom filter, in the order applied: FLAGS holds
//     one byte per item, '0' + 1 (new to the window, counted in BF.CARD) +
//     2 (it flipped a bit in its generation); GENERATION is the decimal
//     generation number it went to. Replay advances the filter to that
//     generation and adds there unconditionally (WindowedBloomFilter::
//     ReplayAdd), so the log, not the clock at replay, decides the
//     generations.
inline constexpr std::string_view kWindowAddedEffect = "bloomgate.bf.wadded";
//
//   bloomgate.cbf.wcount KEY OPS GENERATION ITEM [GENERATION ITEM ...]
//     Adds to and deletes from KEY's windowed counting Bloom filter, in the
//     order applied: OPS holds one byte per item, '+' an add (CBF.ADD,
//     CBF.INCR...), '-' a delete that removed an occurrence; GENERATION is
//     the decimal generation it went to or came from. Replay advances to
//     that generation and adds there, or removes from it if it is still
//     there (WindowedCountingBloomFilter::ReplayAdd / ReplayRemove): the
//     log, not the clock at replay, decides the generations.
inline constexpr std::string_view kWindowCountEffect = "bloomgate.cbf.wcount";
//
// The log itself adds one record no command makes, kLogNeedsSnapshot
// (server/durability/durability.h); it never reaches the journal applier.

// One published record: its framed bytes and the stream offset just past it.
struct JournalRecord {
  uint64_t offset = 0;
  std::string_view bytes;
};

class JournalSubscriber {
 public:
  virtual ~JournalSubscriber() = default;
  // Whether it takes records now (the log: appendonly on and the file open).
  // A write that no subscriber takes is not encoded at all.
  virtual bool accepting() const = 0;
  // Called with the publish lock held, in offset order, and with the
  // write's key locks held: it must only queue the bytes, never wait.
  virtual void OnRecord(const JournalRecord& record) = 0;
  // Whether a client's reply waits for this subscriber to acknowledge.
  virtual bool acknowledges() const { return false; }
  // Blocks until every record up to `offset` is acknowledged (the log:
  // written, and fsynced with appendfsync always). An error: the replies
  // waiting for it must not be sent.
  virtual Status AwaitOffset(uint64_t /*offset*/) { return Status::Ok(); }
};

class Journal {
 public:
  // The most subscribers at once: the log, a replication backlog that every
  // replica link reads, slot migrations, with room to spare.
  static constexpr size_t kMaxSubscribers = 8;

  // Subscribes from the next record on; each subscriber must outlive its
  // subscription. Safe while writers publish (a slot is published with one
  // atomic store, see slots_). False when every slot is taken.
  bool Subscribe(JournalSubscriber* subscriber);
  // Joins the stream at a record boundary: under the publish lock, so the
  // subscriber gets every record that starts at the returned offset or
  // later, and none before it. Where a full sync or a slot migration starts
  // its stream: `at` (may be empty) runs in the same hold of the barrier,
  // with the same offset, so a cut that switches logs and captures the keys
  // there (Durability::Cut) and the joiner's stream meet exactly at it.
  // Empty, and `at` not run, when every slot is taken.
  std::optional<uint64_t> Join(JournalSubscriber* subscriber,
                               const std::function<void(uint64_t next_offset)>& at = nullptr);
  // No record reaches the subscriber once this returns (it takes the publish
  // lock). A reader of the list that loaded it just before (active(),
  // AwaitOffset) may still call it: leave at run time only a subscriber that
  // lives on until the server stops; others unsubscribe while no command
  // runs (shutdown, or a test replacing Durability).
  void Unsubscribe(JournalSubscriber* subscriber);

  // Whether any subscriber takes records now.
  bool active() const;

  // Admission, the one rule for every write: whether the stream can take
  // a record of `body_bytes` from this session. Always true for a session
  // that is not journaled, or while nobody subscribes; else the record must
  // fit the framing (kMaxLogRecordBodyBytes).
  bool CanTake(const JournalSession& session, uint64_t body_bytes) const;

  // Called with the write's key locks held (the record of a creation: with
  // the shard lock that publishes the new key). Publishes nothing for a
  // session whose origin is not journaled.
  void RecordCommand(JournalSession& session, int64_t time_ms,
                     std::span<const std::string_view> args);
  void RecordFilter(JournalSession& session, int64_t time_ms, std::string_view key,
                    const AnyFilter& filter, bool with_payload);
  // A creation record from a description taken earlier: a filter built off
  // the loop and filled before it is published records what it was
  // created as (a merge's new dest, empty).
  void RecordFilterHeader(JournalSession& session, int64_t time_ms, std::string_view key,
                          const FilterHeader& header);

  // A transaction: between BeginUnit and EndUnit (both with its key locks
  // held) the session's records are gathered, then published as one unit
  // record, so the log never replays half of it (a torn tail drops all of
  // it) and a replica applies it whole. One record is published as itself.
  void BeginUnit(JournalSession& session);
  void EndUnit(JournalSession& session, int64_t time_ms);
  // Ends a gathering begun with BeginUnit by publishing `bytes` in place of
  // what was gathered (nothing if empty), whether or not anyone accepts
  // records now: a replica applying its primary's record publishes the
  // primary's own bytes, so its offsets stay its primary's and its own
  // replicas get the stream byte for byte.
  void EndUnitAs(JournalSession& session, std::string_view bytes);
  // The body bytes of a unit of records whose bodies add up to `bodies` in
  // `count` records: what admission asks CanTake about for EXEC.
  static uint64_t UnitBodyBytes(uint64_t bodies, uint64_t count);

  // Waits until the session's records are satisfied by every subscriber
  // that must acknowledge them, then clears session.offset.
  Status AwaitForReply(JournalSession& session);
  // The same for every record up to `offset`.
  Status AwaitOffset(uint64_t offset);

  // Runs `at` with the publish lock held: no record is being published, and
  // `at` learns the offset the next record starts at. Where a subscriber
  // switches files or joins the stream.
  void AtBarrier(const std::function<void(uint64_t next_offset)>& at);

  // The offset the next record starts at.
  uint64_t offset() const;

  // A replica that could not apply a record of its primary's stream (a
  // failed allocation, or a state that already differs) no longer holds
  // what its primary holds: the applier reports it here, INFO shows it
  // (replica_full_sync_needed, replica_unapplied_records), and the replica
  // link reads needs_full_sync() to ask for a full copy instead of going on
  // with a diverged keyspace.
  void ReportUnapplied();
  bool needs_full_sync() const;
  uint64_t unapplied_records() const;

 private:
  // Publishes `bytes`, or gathers them into the session's unit.
  void Take(JournalSession& session, std::string_view bytes);
  void Publish(JournalSession& session, std::string_view bytes);

  // Calls `each` with every subscriber in a slot now.
  template <typename Each>
  void ForEachSubscriber(Each&& each) const;

  // Read on every write without a lock (active(), AwaitOffset), so a slot is
  // an atomic pointer: a joiner fills a free slot with one release store,
  // and a reader's acquire load sees either nothing or the whole subscriber.
  // Slots are filled and cleared under publish_mutex_, which also keeps two
  // joiners off one slot.
  std::array<std::atomic<JournalSubscriber*>, kMaxSubscribers> slots_{};
  // Mints offsets and hands records to subscribers, one record at a time.
  mutable std::mutex publish_mutex_;
  uint64_t next_offset_ = 0;  // guarded by publish_mutex_
  // Records of a primary's stream this server could not apply (relaxed: a
  // figure for INFO and the replica link, guarding no other data).
  std::atomic<uint64_t> unapplied_records_{0};
};

}  // namespace bloomgate
