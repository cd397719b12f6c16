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
// Records made while replaying (JournalSession::replaying) are not
// published again.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "filters/any_filter.h"

namespace bloomgate {

// What the journal keeps per client (it lives in ClientState): whether the
// client is a replay, whose writes are not journaled again, and how far the
// log must be flushed before the replies of its current batch may be sent.
struct JournalSession {
  bool replaying = false;
  uint64_t log_generation = 0;
  uint64_t log_sequence = 0;  // 0 = nothing to flush
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

class JournalSubscriber {
 public:
  virtual ~JournalSubscriber() = default;
  // Whether it takes records now (the log: appendonly on and the file open).
  // A write that no subscriber takes is not encoded at all.
  virtual bool accepting() const = 0;
  // `args[0]` is a command name or an applier effect name.
  virtual void OnCommand(JournalSession& session, int64_t time_ms,
                         std::span<const std::string_view> args) = 0;
  // `with_payload` false: a creation (the payload is all zeros).
  virtual void OnFilter(JournalSession& session, int64_t time_ms, std::string_view key,
                        const AnyFilter& filter, bool with_payload) = 0;
};

class Journal {
 public:
  // Subscribers are added and removed while no command runs (start-up, or a
  // test replacing Durability); each must outlive its subscription.
  void Subscribe(JournalSubscriber* subscriber);
  void Unsubscribe(JournalSubscriber* subscriber);

  // Whether any subscriber takes records now.
  bool active() const;

  // Called with the write's key locks held (the record of a creation: with
  // the shard lock that publishes the new key).
  void RecordCommand(JournalSession& session, int64_t time_ms,
                     std::span<const std::string_view> args);
  void RecordFilter(JournalSession& session, int64_t time_ms, std::string_view key,
                    const AnyFilter& filter, bool with_payload);

 private:
  // Read on every write without a lock: it only changes while no command
  // runs (see Subscribe), and the mutex orders those changes.
  std::mutex subscribe_mutex_;
  std::vector<JournalSubscriber*> subscribers_;
};

}  // namespace bloomgate
