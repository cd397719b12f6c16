// Durability: the snapshot schedule, the append-only log and start-up
// loading, over the formats in persistence/.
//
// The state on disk is always "snapshot + the logs it names":
//   dir/<dbfilename>            the last good snapshot; its header names log
//                               generation G
//   dir/<appendfilename>.G      writes since that snapshot's cut
//   dir/<appendfilename>.G+1..  later generations, if saves failed
// Start-up loads the snapshot, replays logs G, G+1, ... in order (a torn
// final record of the newest is cut off with a warning), and opens a new
// generation for writing.
//
// The write path: a write command appends its record while it still holds
// its key locks (so two writes to one key reach the log in the order they
// ran), and the connection waits for its offset (Journal::AwaitForReply,
// then FlushTo here) before it sends the replies
// of its batch, so no reply acknowledges a write that is not in the file
// (and, with appendfsync always, fsynced).
//
// A snapshot cut (SAVE, BGSAVE, the schedule, shutdown) takes every key
// lock exclusively for a moment: no command runs, so every write so far is
// in the log being closed and every later one goes to the new generation.
// Under the cut it only swaps in log generation N+1 (created, with its
// fsyncs, before the pause) and advances the keyspace's capture epoch
// (Keyspace::BeginCapture): O(1) in the keys, no system call. The old log's
// last flush and fsync come after the pause; until they are done, a reply
// that acknowledges a write waits (FlushTo), in either log.
// Then, with commands running again, a walk (Keyspace::CaptureRemaining,
// on the saver's thread for BGSAVE) records every key that existed at the
// cut with a reference to its entry, shard by shard, 256 keys per hold of a
// shard's lock. A command that reaches such a key before the walk does
// captures it first, under its name and deadline at the cut: every lookup
// (one acquire load of the entry's epoch when it is captured already),
// DEL/UNLINK, RENAME (both names), FLUSHALL, EXPIRE/PERSIST, a replacing
// Put, and every expiry path. Keys stored after the cut carry the new epoch
// and are left to the log. (Issue 15 bug 4: the cut used to walk all keys
// with every lock held, 74 ms median at 50k keys; bench/cut_bench.py.)
// tests/unit/server/durability/cut_window_test.cc puts each kind of write between the
// pause and the walk. Then the snapshot naming N+1 is written and, once it
// is renamed into place, the logs before N+1 are deleted. Why what it
// writes is the state at the cut:
//  - Bloom bits are only ever set. Writing them while adds continue stores
//    every bit set before the cut plus perhaps some set after; the log from
//    N+1 replays those later adds, and adding a present item changes no bit.
//    (Item counters may differ by the adds that raced the copy; BF.CARD is
//    approximate under concurrent adds anyway.)
//  - Counters and cuckoo slots are not idempotent: replaying a delete or an
//    add twice would change them, so the snapshot must hold them exactly as
//    they were at the cut. Their capture arms a copy-on-write on the entry
//    (KeyEntry::ArmSnapshotCopy): the first write command to reach the
//    filter afterwards copies it before changing it, and the saver copies
//    those nobody wrote to. Only writers of a filter being copied wait (for
//    one memory copy of that filter, made off the event loops for a big one:
//    server/keyspace/snapshot_copier.h); reads and all other keys go on.
//    Copies are charged to the memory budget: a writer whose copy does not
//    fit is refused (OOM), a saver's copy that does not fit fails the save.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include <functional>

#include "config/runtime_config.h"
#include "config/server_config.h"
#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/append_log.h"
#include "persistence/file_system.h"
#include "persistence/replication_mark.h"
#include "persistence/status.h"
#include "server/durability/journal.h"
#include "server/durability/progress.h"
#include "server/keyspace/key_locks.h"
#include "server/keyspace/keyspace.h"

namespace bloomgate {

// What durability works on, owned by the server (ServerContext); each must
// outlive the Durability.
struct DurabilityParts {
  RuntimeConfig* config = nullptr;
  Keyspace* keyspace = nullptr;
  KeyLocks* key_locks = nullptr;
  MemoryBudget* budget = nullptr;
  Journal* journal = nullptr;  // Durability subscribes to it
};

// The first record of a log that switching appendonly on started: a command
// record {kLogNeedsSnapshot, "N"}, N the generation of the save that switch
// began. The log continues that snapshot only; loaded with an older one (the
// save never completed), it and every later log are set aside unreplayed.
inline constexpr std::string_view kLogNeedsSnapshot = "bloomgate.log.needs-snapshot";

// Applies one record of the log at start-up (server/commands/journal_applier.h).
using LogRecordApplier = std::function<Status(const LogRecord&)>;

// The append-only log is the journal's first subscriber (server/durability/journal.h).
class Durability : public JournalSubscriber {
 public:
  Durability(const DurabilityParts& parts, FileSystem* fs);
  ~Durability() override;
  Durability(const Durability&) = delete;
  Durability& operator=(const Durability&) = delete;

  // Start-up, before the port opens: loads the snapshot and replays the
  // logs into the (empty) keyspace, then opens a new log generation. An
  // error names the file, the record and the step; the server must not start.
  // Log records go to `apply`.
  //
  // The port is open by then (clients get -LOADING meanwhile): the bytes
  // read so far, of the snapshot's and the logs' sizes, are in INFO and in a
  // log line every ByteProgress::kLogIntervalMs. On failure loading() stays
  // true, so no client sees the half-loaded keyspace while the server exits.
  Status Load(const LogRecordApplier& apply);
  // Marks the server as loading before the port opens, so the first client
  // already gets -LOADING.
  void BeginLoading() { loading_.store(true, std::memory_order_release); }
  // A replica's full sync: clients get -LOADING from BeginLoading until
  // EndLoading, while its keyspace is replaced by the primary's.
  void EndLoading() { loading_.store(false, std::memory_order_release); }
  // Stops a Load in progress at its next read, with an error (graceful stop
  // while loading: nothing is saved, the files stay as they are).
  void CancelLoad() { cancel_load_.store(true, std::memory_order_release); }
  bool load_cancelled() const { return cancel_load_.load(std::memory_order_acquire); }
  // Test hook (BLOOMGATE_TEST_LOAD_BYTES_PER_SEC): caps Load's read rate so
  // a test can watch a load in progress. 0 = no cap.
  void set_load_rate_limit(uint64_t bytes_per_second) { load_rate_limit_ = bytes_per_second; }
  // Test hook: runs after a cut's pause, before its walk (on the thread
  // that walks: the saver's for BGSAVE), so a test can put writes into the
  // window between the two. Set before any save.
  void set_cut_walk_hook(std::function<void()> hook) { cut_walk_hook_ = std::move(hook); }

  // --- the write path (worker threads) -----------------------------------
  // Whether writes are being logged (appendonly yes and the log is open).
  bool logging() const { return logging_.load(std::memory_order_acquire); }
  // JournalSubscriber: queues the record on the open log (with the publish
  // lock and the write's key locks held); a reply waits for its offset to
  // be written (and fsynced with appendfsync always).
  bool accepting() const override { return logging(); }
  void OnRecord(const JournalRecord& record) override;
  bool acknowledges() const override { return true; }
  Status AwaitOffset(uint64_t offset) override { return FlushTo(offset); }
  // Counts a successful write for the save schedule (also without a log).
  void CountChanges(uint64_t n) { changes_.fetch_add(n, std::memory_order_relaxed); }
  // Makes every logged record up to stream offset `offset` durable to the
  // fsync policy's promise. An error means the replies must not be sent.
  Status FlushTo(uint64_t offset);
  // The latched log failure, if any: write commands are refused with MISCONF.
  bool write_error() const { return write_error_.load(std::memory_order_acquire); }

  // --- saves ---------------------------------------------------------------
  // SAVE: a cut, then the snapshot written on this thread.
  Status Save();
  // BGSAVE: a cut, then the snapshot written on a background thread. An
  // error if one is already running.
  Status StartBackgroundSave();
  // BGREWRITEAOF / BGSAVE SCHEDULE: the same, but while one runs, another
  // is scheduled to start when it ends (*scheduled) instead of refused.
  Status StartOrScheduleBackgroundSave(bool* scheduled);
  // A full sync's snapshot: the cut's capture without its log switch (no
  // log is rotated or deleted, no save is counted), `joiner` joined to the
  // journal in the cut's barrier (Journal::Join runs `at` there with the
  // offset the joiner's stream starts at), and the state at that barrier
  // written through `out` (a stream: server/replication/). Its capture is
  // serialised with saves' (the keyspace has one capture at a time): it
  // waits for a background save to end, and until its walk and copies are
  // done BGSAVE and the schedule answer "already in progress" and SAVE
  // waits; the bytes are then sent while saves run again.
  // *bytes: the snapshot's size.
  Status StreamSnapshot(FileSystem& out, JournalSubscriber* joiner,
                        const std::function<void(uint64_t next_offset)>& at, uint64_t* bytes);
  // BGSAVE and the schedule never wait for a SAVE being written: while any
  // save runs they are refused ("already in progress") or scheduled.
  // The schedule (save points) and log housekeeping; called every 100 ms.
  void Tick(int64_t now_ms);
  // Graceful stop: waits for a background save, takes a final snapshot
  // (kDefault: if save points are configured or the log is on; SHUTDOWN
  // SAVE / NOSAVE force or skip it), closes the log.
  enum class FinalSave { kDefault, kSave, kNoSave };
  void Shutdown(FinalSave final_save);
  // Applies CONFIG SET of appendonly / appendfsync / save / dbfilename.
  void ApplyConfig(const ServerConfig& config);

  // --- the replication mark (persistence/replication_mark.h) ---------------
  // Where a cut's state stands in the replication stream: called in the
  // cut's barrier with the journal offset the next record starts at; empty
  // while the data stands for no stream position. Each snapshot written
  // then has its mark written beside it.
  using ReplicationMarkSource =
      std::function<std::optional<ReplicationMark>(uint64_t next_offset)>;
  void set_replication_mark_source(ReplicationMarkSource source);
  // After Load: the stream position the loaded data stands for (the
  // snapshot's mark, plus the stream bytes of the log records replayed after
  // it, which are the stream's records byte for byte), and the journal
  // offset the load ended at (replay publishes nothing, so 0). Empty when
  // no mark pairs with the snapshot.
  struct RestoredMark {
    ReplicationMark mark;
    uint64_t journal_offset = 0;
  };
  std::optional<RestoredMark> restored_mark() const;
  // The data in the files is about to stop being the stream's (a replica's
  // full sync replaces the keyspace, a promotion starts a new history):
  // removes the mark, and a cut taken before this call writes none, so a
  // restart before the next snapshot syncs in full instead of continuing
  // from a position the files no longer hold.
  void ForgetReplicationMark();

  int64_t last_save_time_s() const { return last_save_ms_.load(std::memory_order_relaxed) / 1000; }
  bool loading() const { return loading_.load(std::memory_order_acquire); }
  // The "# Persistence" section of INFO, without its title.
  std::string InfoFields() const;

 private:
  struct SaveJob;

  Status LoadSnapshot(FileSystem& reader, uint64_t* generation);
  // *stream_bytes: the framed bytes of the records replayed (every
  // record but kLogNeedsSnapshot's is a stream record).
  Status ReplayLogs(FileSystem& reader, uint64_t first_generation, const LogRecordApplier& apply,
                    uint64_t* last_generation, uint64_t* stream_bytes);
  // The mark that pairs with the snapshot of `generation`, if one does.
  std::optional<ReplicationMark> PairedMark(uint64_t generation);
  // After a job's snapshot is in place: its mark beside it.
  void WriteMark(const SaveJob& job);
  // Closes the log a cut replaced and releases the flushes waiting for it.
  void RetireLog(const std::shared_ptr<AppendLogWriter>& previous, bool still_logging);
  // Renames each log to <name>.orphaned (see kLogNeedsSnapshot), with a warning.
  void SetAsideOrphanedLogs(std::span<const uint64_t> generations, uint64_t snapshot_generation);
  // The bytes Load will read: the snapshot's size plus every log's.
  uint64_t BytesToLoad() const;
  FilterLimits filter_limits() const;
  Status OpenLog(uint64_t generation);
  // Takes the cut: rotates the log and starts the keyspace's capture into
  // a job, with every key lock held (O(1) in the keys).
  Status Cut(std::unique_ptr<SaveJob>* job);
  // Starts a background save, or sets *busy (and fails) if a save runs.
  Status TryStartBackgroundSave(bool* busy);
  // Then, with no key lock: walks the keyspace to capture what no command
  // captured first. WriteJob calls it (for BGSAVE on the saver's thread).
  void Walk(SaveJob& job);
  // Makes the copies owed to a walked job that no writer made yet, and
  // points its records at them.
  Status CollectCopies(SaveJob& job);
  // Writes a job's snapshot and, on success, deletes the logs it replaces.
  Status WriteJob(SaveJob& job);
  void SyncLoop();

  const DurabilityParts parts_;
  FileSystem* const fs_;

  std::atomic<bool> logging_{false};
  std::atomic<bool> write_error_{false};
  std::atomic<bool> loading_{false};
  std::atomic<bool> cancel_load_{false};
  uint64_t load_rate_limit_ = 0;  // set before Load
  std::function<void()> cut_walk_hook_;  // set before any save
  ByteProgress load_progress_;
  // The save being written (one at a time: save_mutex_ and
  // bgsave_in_progress_); its total is an estimate, the filters' bytes.
  ByteProgress save_progress_;
  std::atomic<bool> save_in_progress_{false};
  std::atomic<uint64_t> changes_{0};  // writes since the last successful save's cut

  // The open log, replaced only at the journal's barrier (and, for a cut,
  // with every key lock held), so OnRecord, which runs under the publish
  // lock, sees a stable writer. FlushTo takes mutex_ to read it.
  mutable std::mutex mutex_;
  std::shared_ptr<AppendLogWriter> log_;  // guarded by mutex_ (read under key locks too)
  // The log a cut replaced, while the cut closes it after its pause; guarded
  // by mutex_, signalled on retired_ when it is closed (see FlushTo).
  std::shared_ptr<AppendLogWriter> retiring_;
  std::condition_variable retired_;
  uint64_t next_generation_ = 0;          // guarded by mutex_ and the cut
  // Where the open log joined the stream: a record ending at stream offset
  // X > log_start_offset_ ends at log sequence log_sequence_base_ + (X -
  // log_start_offset_) (the base counts a kLogNeedsSnapshot record that
  // opened the file). Set with log_, under mutex_ and the barrier.
  uint64_t log_start_offset_ = 0;
  uint64_t log_sequence_base_ = 0;
  ServerConfig::AppendFsync fsync_policy_ = ServerConfig::AppendFsync::kEverySec;
  std::string last_log_error_;            // guarded by mutex_

  // Save bookkeeping for INFO, LASTSAVE and the schedule.
  std::mutex save_mutex_;  // serialises cuts and snapshot writes
  std::thread background_;
  std::atomic<bool> bgsave_in_progress_{false};
  std::atomic<int64_t> bgsave_started_ms_{0};
  std::atomic<int64_t> last_save_ms_{0};
  std::atomic<int64_t> last_save_attempt_ms_{0};
  std::atomic<bool> last_save_ok_{true};
  std::atomic<int64_t> last_save_duration_ms_{-1};
  std::atomic<uint64_t> last_save_bytes_{0};
  std::atomic<uint64_t> saves_{0};
  std::atomic<bool> save_scheduled_{false};
  std::atomic<int64_t> last_cut_usec_{0};
  std::atomic<uint64_t> keys_loaded_{0};
  std::atomic<int64_t> load_duration_ms_{0};
  std::atomic<int64_t> last_cut_wait_us_{-1};   // the last cut waiting for the global lock
  std::atomic<int64_t> last_cut_pause_us_{-1};  // and holding it (every command paused)

  // The replication mark: its source, bumped by ForgetReplicationMark so
  // that a cut taken before writes no mark, and what Load restored.
  mutable std::mutex mark_mutex_;
  // Serialises the mark's file: a write and a removal never interleave
  // (never taken in the barrier, which takes mark_mutex_ only).
  std::mutex mark_file_mutex_;
  ReplicationMarkSource mark_source_;    // guarded by mark_mutex_
  uint64_t mark_epoch_ = 0;              // guarded by mark_mutex_
  std::optional<RestoredMark> restored_;  // guarded by mark_mutex_

  // appendfsync everysec: a thread that fsyncs the log once a second.
  std::thread sync_thread_;
  std::mutex sync_mutex_;
  std::condition_variable sync_wake_;
  bool stop_sync_ = false;  // guarded by sync_mutex_
};

}  // namespace bloomgate
