#include "server/durability/durability.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <vector>

#include "config/config_params.h"
#include "persistence/codec/codec_registry.h"
#include "persistence/snapshot_file.h"
#include "server/base/clock.h"
#include "server/durability/progress_file_system.h"

namespace bloomgate {
namespace {

// Redis's CONFIG_BGSAVE_RETRY_DELAY: after a failed save the schedule waits
// this long before trying again, so a full disk is not hammered every tick.
constexpr int64_t kSaveRetryDelayMs = 5000;
// A log longer than this, and longer than the last snapshot, triggers a
// snapshot (which starts a fresh log): replaying a log costs about a command
// per record, so it must not grow without bound. 64 MiB is Redis's
// auto-aof-rewrite-min-size.
constexpr uint64_t kLogRewriteMinBytes = 64ull << 20;
// Nice value of the background save thread (0 = normal, 19 = lowest); 10
// gives the event loops ~10x its share of a contended core (CFS weights
// 1024 vs 110).
constexpr int kBackgroundSaveNice = 10;

}  // namespace

// What a cut captured: the keys, their deadlines and their filters, kept
// alive by reference to their entries until the snapshot is written; for
// counting and cuckoo filters, the copies owed to it (see durability.h).
// Filled by the keyspace's walk and by the commands that reach a key
// before it (Keyspace::CaptureLocked), from any thread, hence the mutex.
struct Durability::SaveJob : SnapshotCapture {
  SnapshotMeta meta;
  uint64_t changes_at_cut = 0;
  std::mutex mutex;                                   // guards the three below until the walk ends
  std::vector<EntryPtr> entries;                      // parallel to records
  std::vector<std::shared_ptr<SnapshotCopy>> copies;  // parallel; null for Bloom
  std::vector<SnapshotRecordSource> records;
  std::string dir;
  std::string filename;
  std::string log_base;
  bool background = false;
  bool walked = false;  // the keyspace's walk for this cut is done
  // Where the cut stands in the replication stream, and the mark epoch it
  // was taken in (ForgetReplicationMark).
  std::optional<ReplicationMark> mark;
  uint64_t mark_epoch = 0;

  void Capture(const std::string& name, const EntryPtr& entry) override {
    // Captured before anything changed it since the cut (the keyspace
    // guarantees it), so its deadline and counts are those of the cut. A
    // key already expired at the cut is left out, as the loader would.
    if (entry->ExpiredAt(meta.created_ms)) return;
    SnapshotRecordSource record;
    record.name = name;
    record.expire_at_ms = entry->expire_at_ms();
    std::shared_ptr<SnapshotCopy> copy;
    // The family's codec says which rule applies (persistence/codec/).
    if (CodecOf(entry->filter()).payload_readable_while_written()) {
      // Bloom: bits are written later, while adds go on (see durability.h);
      // the counts are taken now, so that replaying the later adds' records,
      // which carry whether each was counted, restores BF.CARD exactly.
      record.filter = &entry->filter();
      record.header = DescribeFilter(entry->filter());
    } else {
      // Owed a copy as of now; made by the first writer or by the saver.
      copy = std::make_shared<SnapshotCopy>();
      entry->ArmSnapshotCopy(copy);
    }
    std::lock_guard lock(mutex);
    entries.push_back(entry);
    copies.push_back(std::move(copy));
    records.push_back(std::move(record));
  }
};

Durability::Durability(const DurabilityParts& parts, FileSystem* fs) : parts_(parts), fs_(fs) {
  ServerConfig config = parts_.config->Get();
  fsync_policy_ = config.appendfsync;
  last_save_ms_.store(NowMs(), std::memory_order_relaxed);
  sync_thread_ = std::thread([this] { SyncLoop(); });
  parts_.journal->Subscribe(this);
}

Durability::~Durability() {
  parts_.journal->Unsubscribe(this);
  {
    std::lock_guard lock(sync_mutex_);
    stop_sync_ = true;
  }
  sync_wake_.notify_all();
  if (sync_thread_.joinable()) sync_thread_.join();
  if (background_.joinable()) background_.join();
}

// ------------------------------------------------------------ start-up ----

FilterLimits Durability::filter_limits() const {
  // The same figure ServerContext::filter_limits() serves to commands.
  FilterLimits limits;
  limits.max_filter_bytes = parts_.config->Get().max_filter_memory;
  return limits;
}

uint64_t Durability::BytesToLoad() const {
  ServerConfig config = parts_.config->Get();
  uint64_t total = 0;
  uint64_t size = 0;
  std::string snapshot = JoinPath(config.dir, config.dbfilename);
  if (fs_->Exists(snapshot) && fs_->FileSize(snapshot, &size).ok()) total += size;
  std::vector<uint64_t> generations;
  if (ListLogGenerations(*fs_, config.dir, config.appendfilename, &generations).ok()) {
    for (uint64_t generation : generations) {
      std::string path = JoinPath(config.dir, LogFileName(config.appendfilename, generation));
      if (fs_->FileSize(path, &size).ok()) total += size;
    }
  }
  return total;
}

Status Durability::Load(const LogRecordApplier& apply) {
  loading_.store(true, std::memory_order_release);
  auto start = std::chrono::steady_clock::now();
  ServerConfig config = parts_.config->Get();
  load_progress_.Begin(BytesToLoad(), NowMs());
  ProgressFileSystem::Options options;
  options.progress = &load_progress_;
  options.cancel = &cancel_load_;
  options.max_read_bytes_per_second = load_rate_limit_;
  options.on_progress = [this] {
    int64_t now = NowMs();
    if (load_progress_.LogDue(now)) {
      spdlog::info("loading: {}", ByteProgress::Describe(load_progress_.Read(now)));
    }
  };
  ProgressFileSystem reader(fs_, std::move(options));
  uint64_t generation = 0;
  Status status = LoadSnapshot(reader, &generation);
  std::optional<ReplicationMark> mark;
  if (status.ok()) mark = PairedMark(generation);
  uint64_t last_generation = 0;
  uint64_t stream_bytes = 0;
  if (status.ok()) {
    status = ReplayLogs(reader, generation, apply, &last_generation, &stream_bytes);
  }
  if (status.ok() && mark.has_value()) {
    RestoredMark restored{.mark = *mark, .journal_offset = parts_.journal->offset()};
    restored.mark.offset += stream_bytes;
    spdlog::info("the data loaded stands at offset {} of replication stream {} (the snapshot's "
                 "cut at {}, then {} bytes of log records)",
                 restored.mark.offset, restored.mark.replid, mark->offset, stream_bytes);
    std::lock_guard lock(mark_mutex_);
    restored_ = std::move(restored);
  }
  if (status.ok()) {
    // Continue after the newest log found, or with the generation the
    // snapshot names; generation numbers start at 1.
    uint64_t next = std::max<uint64_t>({generation, last_generation + 1, 1});
    {
      std::lock_guard lock(mutex_);
      next_generation_ = next;
    }
    if (config.appendonly) status = OpenLog(next);
  }
  if (status.ok()) {
    // Keys that expired after the snapshot's cut or during the logs: gone
    // before the first client can see them. Swept once the new log is
    // open, so their deletions are in it (as DEL, like every expiry) for
    // every subscriber of the stream; they are flushed with the first
    // write's reply or the next fsync, and losing them loses nothing (the
    // deadlines are in the files).
    size_t swept = parts_.keyspace->SweepExpired(NowMs(), SIZE_MAX);
    if (swept > 0) spdlog::info("{} keys expired while the server was down", swept);
  }
  load_duration_ms_.store(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count(),
                          std::memory_order_relaxed);
  // Only a complete load ends the loading state (see durability.h).
  if (status.ok()) loading_.store(false, std::memory_order_release);
  return status;
}

Status Durability::LoadSnapshot(FileSystem& reader, uint64_t* generation) {
  ServerConfig config = parts_.config->Get();
  std::string path = JoinPath(config.dir, config.dbfilename);
  *generation = 0;
  // A crash in the middle of a save leaves its temporary file; no save can
  // be running yet, so any found now is garbage.
  std::vector<std::string> names;
  const std::string mark_name = ReplicationMarkFileName(config.dbfilename);
  if (fs_->ListDirectory(config.dir, &names).ok()) {
    for (const std::string& name : names) {
      if (!IsSnapshotTempFile(config.dbfilename, name) && !IsSnapshotTempFile(mark_name, name)) {
        continue;
      }
      spdlog::warn("removing {}, left by a save that did not finish", JoinPath(config.dir, name));
      (void)fs_->Remove(JoinPath(config.dir, name));
    }
  }
  if (!fs_->Exists(path)) {
    spdlog::info("no snapshot at {}; starting empty", path);
    return Status::Ok();
  }
  auto start = std::chrono::steady_clock::now();
  SnapshotInfo info;
  std::vector<LoadedRecord> records;
  Status status =
      ReadSnapshot(reader, path, filter_limits(), parts_.budget, &info, &records);
  if (!status.ok()) return status;
  // Expiry is judged at the cut, not now: the log that continues this
  // snapshot replays at its records' times, so a key that was alive at the
  // cut must be there for the writes that reached it before it expired (else
  // a replayed BF.ADD would recreate it with default parameters and no
  // deadline). Keys whose deadline passed since are swept after the replay.
  const int64_t cut = info.meta.created_ms;
  uint64_t expired = 0;
  for (LoadedRecord& record : records) {
    if (record.expire_at_ms != 0 && record.expire_at_ms <= cut) {
      ++expired;
      continue;
    }
    parts_.keyspace->Put(record.name, std::make_shared<KeyEntry>(std::move(record.filter)),
                         record.expire_at_ms);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  keys_loaded_.store(records.size() - expired, std::memory_order_relaxed);
  last_save_ms_.store(info.meta.created_ms, std::memory_order_relaxed);
  last_save_bytes_.store(info.file_bytes, std::memory_order_relaxed);
  spdlog::info("loaded snapshot {}: {} keys ({} expired before its cut), {} bytes in {:.3f} s "
               "({:.0f} MB/s)",
               path, records.size() - expired, expired, info.file_bytes, seconds,
               seconds > 0 ? static_cast<double>(info.file_bytes) / 1e6 / seconds : 0.0);
  *generation = info.meta.log_generation;
  return Status::Ok();
}

Status Durability::ReplayLogs(FileSystem& reader, uint64_t first_generation,
                              const LogRecordApplier& apply, uint64_t* last_generation,
                              uint64_t* stream_bytes) {
  *stream_bytes = 0;
  ServerConfig config = parts_.config->Get();
  std::vector<uint64_t> generations;
  Status status = ListLogGenerations(*fs_, config.dir, config.appendfilename, &generations);
  if (!status.ok()) return status;
  *last_generation = 0;
  std::vector<uint64_t> live;
  for (uint64_t generation : generations) {
    std::string path = JoinPath(config.dir, LogFileName(config.appendfilename, generation));
    if (generation < first_generation) {
      // Superseded by the snapshot: after a crash between a save's rename
      // and the deletion of the logs it replaces, its records are in the
      // snapshot. But a snapshot from elsewhere (bloomgate build, a copied
      // file) also names a later generation, and then they are writes that
      // it lacks: a log with records is kept aside, with a warning.
      uint64_t size = 0;
      if (fs_->FileSize(path, &size).ok()) load_progress_.AddTotal(-static_cast<int64_t>(size));
      LogReadResult counted;
      Status readable = ReadAppendLog(
          reader, path, /*allow_torn_tail=*/true,
          [](const LogRecord&) { return Status::Ok(); }, &counted);
      if (readable.ok() && counted.records == 0) {
        spdlog::info("removing {}: older than the snapshot, and it holds no records", path);
        (void)fs_->Remove(path);
        continue;
      }
      const std::string aside = path + ".superseded";
      spdlog::warn("not replaying {}: its {} records{} are older than the snapshot (log "
                   "generation {}, the snapshot continues generation {}). They are in the "
                   "snapshot if a crash cut its save short; they are lost if the snapshot "
                   "came from elsewhere (bloomgate build, a copied file). Moved to {}",
                   path, counted.records,
                   readable.ok() ? "" : " (and a damaged rest: " + readable.message() + ")",
                   generation, first_generation, aside);
      Status moved = fs_->Rename(path, aside);
      if (!moved.ok()) {
        spdlog::warn("moving {} aside failed ({}); removing it", path, moved.message());
        (void)fs_->Remove(path);
      }
      continue;
    }
    live.push_back(generation);
  }
  uint64_t total_records = 0;
  size_t replayed_files = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    std::string path = JoinPath(config.dir, LogFileName(config.appendfilename, live[i]));
    // Only the newest log can end in a torn record: an older one was closed
    // (flushed and fsynced) before the next was used.
    bool newest = i + 1 == live.size();
    LogReadResult result;
    // A log started by switching appendonly on continues only the snapshot
    // of that switch's save. With an older snapshot it (and every later
    // generation) would be replayed onto a state that lacks the writes made
    // while the log was off: a CBF.DEL or CF.DEL replayed there takes
    // counters or fingerprints from other items. Redis likewise does not
    // use an AOF that `CONFIG SET appendonly yes` started until its rewrite
    // ends.
    bool orphaned = false;
    // The log's own records, which the stream never carried.
    uint64_t own_bytes = 0;
    auto checked_apply = [&](const LogRecord& record) {
      if (record.type == LogRecordType::kCommand && record.args.size() == 2 &&
          record.args[0] == kLogNeedsSnapshot) {
        const std::string_view marker[] = {record.args[0], record.args[1]};
        own_bytes += FramedRecordBytes(CommandRecordBodyBytes(marker));
        const std::string& text = record.args[1];
        uint64_t needed = 0;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), needed);
        if (error != std::errc() || end != text.data() + text.size()) {
          return Status::Error("a " + std::string(kLogNeedsSnapshot) +
                               " record with a bad generation");
        }
        if (needed > first_generation) {
          orphaned = true;
          return Status::Error("stop");
        }
        return Status::Ok();
      }
      return apply(record);
    };
    status = ReadAppendLog(reader, path, /*allow_torn_tail=*/newest, checked_apply, &result);
    if (orphaned) {
      SetAsideOrphanedLogs(std::span<const uint64_t>(live).subspan(i), first_generation);
      break;
    }
    if (!status.ok() && !newest) {
      // Redis's aof-load-truncated covers only the last file too.
      return Status::Error(status.message() + "; this log is not the newest (generation " +
                           std::to_string(live[i + 1]) +
                           " follows), so it was closed whole and this is damage, not a torn "
                           "write: start-up stops and leaves the files as they are");
    }
    if (!status.ok()) return status;
    if (result.torn_tail) {
      spdlog::warn("{}: the final record was torn (a crash during its write); cutting the file "
                   "at byte {} and continuing",
                   path, result.valid_bytes);
      status = fs_->Truncate(path, result.valid_bytes);
      // Make the cut durable: a torn record that came back after another
      // crash would sit in a log that is no longer the newest, and refuse
      // start-up.
      std::unique_ptr<WritableFile> file;
      if (status.ok()) status = fs_->OpenForAppend(path, &file);
      if (status.ok()) status = file->Sync();
      if (status.ok()) status = file->Close();
      if (!status.ok()) return status;
    }
    total_records += result.records;
    *stream_bytes += result.record_bytes - own_bytes;
    *last_generation = live[i];
    ++replayed_files;
  }
  if (replayed_files > 0) {
    spdlog::info("replayed {} log records from {} log file(s), generations {}..{}",
                 total_records, replayed_files, live.front(), live[replayed_files - 1]);
  }
  return Status::Ok();
}

void Durability::SetAsideOrphanedLogs(std::span<const uint64_t> generations,
                                      uint64_t snapshot_generation) {
  ServerConfig config = parts_.config->Get();
  for (uint64_t generation : generations) {
    const std::string path = JoinPath(config.dir, LogFileName(config.appendfilename, generation));
    // Kept for the operator under a name no start-up reads (and no later log
    // generation can take); replaying it is never right.
    const std::string aside = path + ".orphaned";
    LogReadResult counted;
    (void)ReadAppendLog(*fs_, path, /*allow_torn_tail=*/true,
                        [](const LogRecord&) { return Status::Ok(); }, &counted);
    spdlog::warn("not replaying {} ({} records): it was started by switching appendonly on "
                 "and the save that switch began never completed (the snapshot names "
                 "generation {}); the writes in it were made before they could be durable. "
                 "Moved to {}",
                 path, counted.records, snapshot_generation, aside);
    Status moved = fs_->Rename(path, aside);
    if (!moved.ok()) {
      spdlog::warn("moving {} aside failed ({}); removing it", path, moved.message());
      (void)fs_->Remove(path);
    }
  }
  (void)fs_->SyncDirectory(config.dir.empty() ? "." : config.dir);
}

Status Durability::OpenLog(uint64_t generation) {
  ServerConfig config = parts_.config->Get();
  std::unique_ptr<AppendLogWriter> writer;
  Status status =
      AppendLogWriter::Create(fs_, config.dir, config.appendfilename, generation, NowMs(), &writer);
  if (!status.ok()) return status;
  spdlog::info("append-only log {} opened (appendfsync {})", writer->path(),
               FormatAppendFsync(config.appendfsync));
  parts_.journal->AtBarrier([&](uint64_t next_offset) {
    std::lock_guard lock(mutex_);
    log_ = std::move(writer);
    log_start_offset_ = next_offset;
    log_sequence_base_ = 0;
    next_generation_ = generation + 1;
    logging_.store(true, std::memory_order_release);
  });
  return Status::Ok();
}

// ---------------------------------------------------------- write path ----

void Durability::OnRecord(const JournalRecord& record) {
  // log_ changes only at the journal's barrier, which waits for this
  // publish: reading it here without mutex_ is ordered by the publish lock.
  AppendLogWriter* log = log_.get();
  if (log != nullptr) (void)log->Append(record.bytes);
}

Status Durability::FlushTo(uint64_t offset) {
  std::shared_ptr<AppendLogWriter> log;
  bool sync = false;
  uint64_t start = 0;
  uint64_t base = 0;
  {
    std::unique_lock lock(mutex_);
    // A cut closes the old log after its pause (Cut). Until that is done no
    // write is acknowledged, in either log: the logs together must keep the
    // prefix property one file has (nothing after a lost record survives),
    // else a CF.DEL in the new log could outlive the CF.ADD it followed.
    retired_.wait(lock, [this] { return retiring_ == nullptr; });
    log = log_;
    start = log_start_offset_;
    base = log_sequence_base_;
    sync = fsync_policy_ == ServerConfig::AppendFsync::kAlways;
  }
  if (log == nullptr || offset <= start) {
    // In a log a cut closed since (flushed and fsynced it; it reported any
    // failure through write_error_), or published while no log was open.
    return write_error() ? Status::Error("the append-only log could not be written")
                         : Status::Ok();
  }
  Status status = log->Flush(base + (offset - start), sync);
  if (!status.ok() && !write_error_.exchange(true, std::memory_order_acq_rel)) {
    spdlog::error("append-only log failed, refusing writes from now on: {}", status.message());
    std::lock_guard lock(mutex_);
    last_log_error_ = status.message();
  }
  // One flush of the newest log stands for waiters on older logs too (the
  // connection flushes once per pass): if a cut could not close an older
  // log, the records in it are not known to be durable, so nothing waiting
  // now is acknowledged.
  if (status.ok() && write_error()) {
    return Status::Error("the append-only log could not be written");
  }
  return status;
}

void Durability::SyncLoop() {
  std::unique_lock lock(sync_mutex_);
  while (!stop_sync_) {
    sync_wake_.wait_for(lock, std::chrono::seconds(1));
    if (stop_sync_) break;
    std::shared_ptr<AppendLogWriter> log;
    {
      std::unique_lock guard(mutex_);
      if (fsync_policy_ != ServerConfig::AppendFsync::kEverySec) continue;
      // Not the new log before the old one is durable (see FlushTo): after
      // a machine crash the old one would end torn, and it is not the newest.
      retired_.wait(guard, [this] { return retiring_ == nullptr; });
      log = log_;
    }
    if (log == nullptr) continue;
    lock.unlock();
    Status status = log->Sync();
    lock.lock();
    if (!status.ok() && !write_error_.exchange(true, std::memory_order_acq_rel)) {
      spdlog::error("append-only log fsync failed, refusing writes from now on: {}",
                    status.message());
      std::lock_guard guard(mutex_);
      last_log_error_ = status.message();
    }
  }
}

// --------------------------------------------------------------- saves ----

Status Durability::Cut(std::unique_ptr<SaveJob>* out) {
  ServerConfig config = parts_.config->Get();
  auto job = std::make_unique<SaveJob>();
  job->dir = config.dir;
  job->filename = config.dbfilename;
  job->log_base = config.appendfilename;
  // How long writers wait for the cut: INFO's latest_fork_usec (our
  // counterpart of Redis's fork time: the pause every client sees).
  const auto cut_start = std::chrono::steady_clock::now();
  struct CutTimer {
    std::chrono::steady_clock::time_point start;
    std::atomic<int64_t>* out;
    ~CutTimer() {
      out->store(std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count(),
                 std::memory_order_relaxed);
    }
  };
  // Declared before the lock guard, so it stops after the guard is released.
  CutTimer cut_timer{cut_start, &last_cut_usec_};
  uint64_t generation = 0;
  {
    std::lock_guard lock(mutex_);
    generation = next_generation_;  // cuts are serialised by save_mutex_
  }
  // The next log is made before the pause: creating it (the file, its
  // header, an fsync of each and of the directory) took most of the 14-21 ms
  // the pause lasted at 1M keys (bench/cut_bench.py). A crash from here to
  // the switch leaves an empty generation after the current one, which
  // replays as nothing.
  std::unique_ptr<AppendLogWriter> next;
  uint64_t next_sequence_base = 0;
  if (config.appendonly) {
    Status status = AppendLogWriter::Create(fs_, config.dir, config.appendfilename, generation,
                                            NowMs(), &next);
    if (!status.ok()) return status.WithContext("starting a new log generation: ");
    if (!logging()) {
      // appendonly was just switched on: the writes made while it was off
      // are in no file, so this log continues only the snapshot this cut is
      // about to write, never an older one (see kLogNeedsSnapshot).
      const std::string needs = std::to_string(generation);
      const std::string_view marker[] = {kLogNeedsSnapshot, needs};
      std::string record;
      EncodeCommandRecord(NowMs(), marker, &record);
      // Durable with the first flush, before any write it precedes.
      next_sequence_base = next->Append(record);
    }
  }
  std::shared_ptr<AppendLogWriter> previous;
  {
    // No command runs while this is held: every write so far is in the
    // current log, every later one will be in the next.
    const auto requested = std::chrono::steady_clock::now();
    KeyLocks::Guard all = parts_.key_locks->LockAll(/*exclusive=*/true);
    const auto locked = std::chrono::steady_clock::now();
    // For INFO (bench/cut_bench.py): how long the cut waited for the
    // commands already running, and how long it held every command back.
    // Declared after the guard, so it stops before the guard is released.
    struct PauseMeter {
      Durability* self;
      std::chrono::steady_clock::time_point requested, locked;
      ~PauseMeter() {
        using std::chrono::duration_cast;
        using std::chrono::microseconds;
        self->last_cut_wait_us_.store(duration_cast<microseconds>(locked - requested).count(),
                                      std::memory_order_relaxed);
        self->last_cut_pause_us_.store(
            duration_cast<microseconds>(std::chrono::steady_clock::now() - locked).count(),
            std::memory_order_relaxed);
      }
    } meter{this, requested, locked};
    const int64_t now = NowMs();
    // At the journal's barrier too: records published without key locks
    // (an expiry sweep's deletions) fall on one side of the switch.
    parts_.journal->AtBarrier([&](uint64_t next_offset) {
      {
        std::lock_guard lock(mutex_);
        previous = std::move(log_);
        log_ = std::move(next);
        log_start_offset_ = next_offset;
        log_sequence_base_ = next_sequence_base;
        logging_.store(config.appendonly, std::memory_order_release);
        // Until it is closed, no write in a later log is acknowledged (FlushTo).
        retiring_ = previous;
        next_generation_ = generation + 1;
      }
      // Where the snapshot stands in the stream: exactly where the new log
      // starts, so a restart's offset is this plus the log's bytes.
      std::lock_guard lock(mark_mutex_);
      job->mark_epoch = mark_epoch_;
      if (mark_source_) job->mark = mark_source_(next_offset);
    });
    job->meta.created_ms = now;
    job->meta.log_generation = generation;
    job->changes_at_cut = changes_.load(std::memory_order_relaxed);
    // The keys are captured after the pause (Walk); from here on, whatever
    // reaches a key first captures it for this job.
    parts_.keyspace->BeginCapture(job.get());
  }
  // The old log's last flush and fsync, after the pause: commands run
  // again, and only those that must reply to a write wait, in FlushTo.
  if (previous != nullptr) RetireLog(previous, /*still_logging=*/config.appendonly);
  *out = std::move(job);
  return Status::Ok();
}

void Durability::RetireLog(const std::shared_ptr<AppendLogWriter>& previous, bool still_logging) {
  Status closed = previous->Close();
  if (!closed.ok()) {
    if (!still_logging) {
      // appendonly was switched off: the snapshot this cut starts holds
      // every write, and no later write goes to a log.
      spdlog::warn("closing {} failed: {}", previous->path(), closed.message());
    } else if (!write_error_.exchange(true, std::memory_order_acq_rel)) {
      // Latched before the waiters are released: each of them sees it.
      spdlog::error("closing {} failed, refusing writes from now on: {}", previous->path(),
                    closed.message());
      std::lock_guard lock(mutex_);
      last_log_error_ = closed.message();
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (retiring_ == previous) retiring_.reset();
  }
  retired_.notify_all();
}

void Durability::Walk(SaveJob& job) {
  if (job.walked) return;
  if (cut_walk_hook_) cut_walk_hook_();
  parts_.keyspace->CaptureRemaining();
  parts_.keyspace->EndCapture();
  // Every capture is complete now (each ran under its entry's capture
  // mutex, which the walk took after it); the mutex makes their pushes
  // visible to this thread, which reads the job without it from here on.
  std::lock_guard lock(job.mutex);
  job.walked = true;
}

Status Durability::CollectCopies(SaveJob& job) {
  // Collect the copies owed to this snapshot, making those no writer has
  // made yet. Each takes only its own entry's lock: writers to that filter
  // wait for its copy, everything else runs on.
  Status status = Status::Ok();
  for (size_t i = 0; i < job.records.size(); ++i) {
    if (job.copies[i] == nullptr) continue;
    (void)job.entries[i]->TakeSnapshotCopy(parts_.budget, /*final_attempt=*/true);
    const AnyFilter& copy = job.copies[i]->filter;
    bool missing = std::visit([](const auto& filter) { return filter == nullptr; }, copy);
    if (missing && status.ok()) {
      status = Status::Error("out of memory copying key '" + job.records[i].name +
                             "' for the snapshot");
    }
    job.records[i].filter = &copy;
  }
  return status;
}

Status Durability::WriteJob(SaveJob& job) {
  Walk(job);
  auto start = std::chrono::steady_clock::now();
  Status status = CollectCopies(job);
  uint64_t bytes = 0;
  if (status.ok()) {
    // The filters' bytes stand for the file's size (headers and names add
    // a little): a percentage for INFO and the log, not a promise.
    save_progress_.Begin(parts_.budget->used(), NowMs());
    save_in_progress_.store(true, std::memory_order_release);
    ProgressFileSystem::Options options;
    options.progress = &save_progress_;
    options.on_progress = [this, &job] {
      int64_t now = NowMs();
      if (save_progress_.LogDue(now)) {
        spdlog::info("{} of {}: {} (size estimated)", job.background ? "background save" : "save",
                     JoinPath(job.dir, job.filename),
                     ByteProgress::Describe(save_progress_.Read(now)));
      }
    };
    ProgressFileSystem writer(fs_, std::move(options));
    status = WriteSnapshot(writer, job.dir, job.filename, job.meta, job.records, &bytes);
    save_in_progress_.store(false, std::memory_order_release);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  last_save_attempt_ms_.store(NowMs(), std::memory_order_relaxed);
  last_save_duration_ms_.store(static_cast<int64_t>(seconds * 1000), std::memory_order_relaxed);
  last_save_ok_.store(status.ok(), std::memory_order_relaxed);
  if (!status.ok()) {
    spdlog::error("{} failed: {}", job.background ? "background save" : "save", status.message());
    return status;
  }
  changes_.fetch_sub(job.changes_at_cut, std::memory_order_relaxed);
  last_save_ms_.store(NowMs(), std::memory_order_relaxed);
  last_save_bytes_.store(bytes, std::memory_order_relaxed);
  saves_.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("snapshot {} written{}: {} keys, {} bytes in {:.3f} s ({:.0f} MB/s)",
               JoinPath(job.dir, job.filename), job.background ? " in the background" : "",
               job.records.size(), bytes, seconds,
               seconds > 0 ? static_cast<double>(bytes) / 1e6 / seconds : 0.0);
  WriteMark(job);
  // The snapshot now stands for everything before its log generation.
  std::vector<uint64_t> generations;
  if (ListLogGenerations(*fs_, job.dir, job.log_base, &generations).ok()) {
    for (uint64_t generation : generations) {
      if (generation >= job.meta.log_generation) continue;
      std::string path = JoinPath(job.dir, LogFileName(job.log_base, generation));
      Status removed = fs_->Remove(path);
      if (!removed.ok()) spdlog::warn("could not remove {}: {}", path, removed.message());
    }
  }
  return Status::Ok();
}

std::optional<ReplicationMark> Durability::PairedMark(uint64_t generation) {
  const ServerConfig config = parts_.config->Get();
  ReplicationMark mark;
  bool found = false;
  Status status = ReadReplicationMark(*fs_, config.dir, config.dbfilename, &mark, &found);
  if (!status.ok()) {
    spdlog::warn("ignoring the replication mark: {}; a replica syncs in full", status.message());
    return std::nullopt;
  }
  if (!found) return std::nullopt;
  if (generation == 0 || mark.log_generation != generation) {
    // A crash between the snapshot's replacement and its mark's, or a
    // snapshot from elsewhere.
    spdlog::info("ignoring the replication mark: it names log generation {}, the snapshot {}",
                 mark.log_generation, generation);
    return std::nullopt;
  }
  return mark;
}

void Durability::WriteMark(const SaveJob& job) {
  std::lock_guard files(mark_file_mutex_);
  {
    std::lock_guard lock(mark_mutex_);
    if (!job.mark.has_value() || job.mark_epoch != mark_epoch_) return;
  }
  ReplicationMark mark = *job.mark;
  mark.log_generation = job.meta.log_generation;
  Status status = WriteReplicationMark(*fs_, job.dir, job.filename, mark);
  if (!status.ok()) {
    // The old mark names an older generation and pairs with no snapshot.
    spdlog::warn("writing the replication mark failed ({}): a restart before the next save "
                 "syncs in full",
                 status.message());
  }
}

void Durability::set_replication_mark_source(ReplicationMarkSource source) {
  std::lock_guard lock(mark_mutex_);
  mark_source_ = std::move(source);
}

std::optional<Durability::RestoredMark> Durability::restored_mark() const {
  std::lock_guard lock(mark_mutex_);
  return restored_;
}

void Durability::ForgetReplicationMark() {
  std::lock_guard files(mark_file_mutex_);
  {
    std::lock_guard lock(mark_mutex_);
    ++mark_epoch_;
    restored_.reset();
  }
  const ServerConfig config = parts_.config->Get();
  Status status = RemoveReplicationMark(*fs_, config.dir, config.dbfilename);
  if (!status.ok()) spdlog::warn("removing the replication mark: {}", status.message());
}

Status Durability::StreamSnapshot(FileSystem& out, JournalSubscriber* joiner,
                                  const std::function<void(uint64_t next_offset)>& at,
                                  uint64_t* bytes) {
  // One capture at a time (the keyspace has one capture epoch): after a
  // running background save, and holding save_mutex_ so none starts.
  std::unique_lock lock(save_mutex_);
  while (bgsave_in_progress_.load(std::memory_order_acquire)) {
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    lock.lock();
  }
  auto job = std::make_unique<SaveJob>();
  job->dir = ".";
  job->filename = "replication-stream";
  {
    // The cut, without its log switch: no command runs, so the joiner's
    // stream starts exactly where the captured state ends.
    KeyLocks::Guard all = parts_.key_locks->LockAll(/*exclusive=*/true);
    job->meta.created_ms = NowMs();
    if (!parts_.journal->Join(joiner, at)) {
      return Status::Error("no free journal slot for another replica");
    }
    parts_.keyspace->BeginCapture(job.get());
  }
  Walk(*job);
  Status status = CollectCopies(*job);
  // The capture is complete (the walk ended it, the copies are made): a
  // save may cut again while this one is still being sent, so a SAVE never
  // waits for a slow replica to read.
  lock.unlock();
  if (status.ok()) {
    status = WriteSnapshot(out, job->dir, job->filename, job->meta, job->records, bytes);
  }
  return status;
}

Status Durability::Save() {
  std::lock_guard lock(save_mutex_);
  if (bgsave_in_progress_.load(std::memory_order_acquire)) {
    return Status::Error("ERR Background save already in progress");
  }
  std::unique_ptr<SaveJob> job;
  Status status = Cut(&job);
  if (!status.ok()) {
    last_save_ok_.store(false, std::memory_order_relaxed);
    last_save_attempt_ms_.store(NowMs(), std::memory_order_relaxed);
    spdlog::error("save failed: {}", status.message());
    return status;
  }
  return WriteJob(*job);
}

Status Durability::StartBackgroundSave() {
  bool busy = false;
  return TryStartBackgroundSave(&busy);
}

Status Durability::TryStartBackgroundSave(bool* busy) {
  *busy = false;
  // Never waits: a SAVE holds save_mutex_ for its whole write, and the
  // callers (BGSAVE, the tick) run on an event loop, whose other clients
  // would wait with them. Redis cannot see a save request during SAVE (SAVE
  // blocks its one thread); the nearest answer is the one it gives while
  // its child saves.
  std::unique_lock lock(save_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || bgsave_in_progress_.load(std::memory_order_acquire)) {
    *busy = true;
    return Status::Error("ERR Background save already in progress");
  }
  if (background_.joinable()) background_.join();
  // In progress from before the cut: the cut switches the log (aof_enabled)
  // and INFO must not show that switch without the save that completes it.
  bgsave_in_progress_.store(true, std::memory_order_release);
  bgsave_started_ms_.store(NowMs(), std::memory_order_relaxed);
  std::unique_ptr<SaveJob> job;
  Status status = Cut(&job);
  if (!status.ok()) {
    bgsave_in_progress_.store(false, std::memory_order_release);
    last_save_ok_.store(false, std::memory_order_relaxed);
    last_save_attempt_ms_.store(NowMs(), std::memory_order_relaxed);
    spdlog::error("background save failed: {}", status.message());
    return status;
  }
  job->background = true;
  background_ = std::thread([this, job = std::move(job)]() mutable {
    // Below the event loops: on a machine with as many cores as loops the
    // saver otherwise takes CPU from them, and the snapshot is never urgent
    // (the log already holds every write).
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kBackgroundSaveNice);
    (void)WriteJob(*job);
    job.reset();  // frees the copies and drops the entry references first
    bgsave_in_progress_.store(false, std::memory_order_release);
  });
  return Status::Ok();
}

Status Durability::StartOrScheduleBackgroundSave(bool* scheduled) {
  *scheduled = false;
  bool busy = false;
  Status status = TryStartBackgroundSave(&busy);
  if (!busy) return status;
  // One is running: Tick starts another when it ends, as Redis schedules
  // a BGREWRITEAOF that arrives during a BGSAVE.
  save_scheduled_.store(true, std::memory_order_relaxed);
  *scheduled = true;
  return Status::Ok();
}

void Durability::Tick(int64_t now_ms) {
  if (bgsave_in_progress_.load(std::memory_order_acquire)) return;
  ServerConfig config = parts_.config->Get();
  bool want_log = config.appendonly;
  bool due = want_log != logging();  // appendonly was switched: a cut applies it
  // Cleared only once the scheduled save has started (below): INFO never
  // shows neither a save running nor one scheduled in between, which a
  // client waiting for the rewrite would take for "done" (as Redis keeps
  // aof_rewrite_scheduled until the rewrite starts).
  const bool scheduled = save_scheduled_.load(std::memory_order_relaxed);
  if (scheduled) due = true;
  uint64_t changes = changes_.load(std::memory_order_relaxed);
  int64_t since_save = now_ms - last_save_ms_.load(std::memory_order_relaxed);
  bool retry_ok = last_save_ok_.load(std::memory_order_relaxed) ||
                  now_ms - last_save_attempt_ms_.load(std::memory_order_relaxed) >=
                      kSaveRetryDelayMs;
  for (const ServerConfig::SavePoint& point : config.save) {
    if (changes >= point.changes &&
        since_save >= static_cast<int64_t>(point.seconds) * 1000 && retry_ok) {
      due = true;
    }
  }
  if (!due && logging() && retry_ok) {
    std::shared_ptr<AppendLogWriter> log;
    {
      std::lock_guard lock(mutex_);
      log = log_;
    }
    uint64_t log_bytes = log == nullptr ? 0 : log->written_bytes();
    due = log_bytes > std::max(kLogRewriteMinBytes, last_save_bytes_.load());
  }
  if (!due) return;
  bool busy = false;
  (void)TryStartBackgroundSave(&busy);
  // A SAVE is writing: the save points are judged again at the next tick,
  // against the changes left after it; a scheduled save keeps its place.
  if (scheduled && !busy) save_scheduled_.store(false, std::memory_order_relaxed);
}

void Durability::ApplyConfig(const ServerConfig& config) {
  std::lock_guard lock(mutex_);
  fsync_policy_ = config.appendfsync;
}

void Durability::Shutdown(FinalSave final_save) {
  {
    std::lock_guard lock(sync_mutex_);
    stop_sync_ = true;
  }
  sync_wake_.notify_all();
  if (sync_thread_.joinable()) sync_thread_.join();
  {
    std::lock_guard lock(save_mutex_);
    if (background_.joinable()) background_.join();
  }
  ServerConfig config = parts_.config->Get();
  bool save = final_save == FinalSave::kSave ||
              (final_save == FinalSave::kDefault && (!config.save.empty() || config.appendonly));
  if (save) {
    spdlog::info("saving the final snapshot before exit");
    (void)Save();
  }
  std::shared_ptr<AppendLogWriter> log;
  parts_.journal->AtBarrier([&](uint64_t) {
    std::lock_guard lock(mutex_);
    log = std::move(log_);
    logging_.store(false, std::memory_order_release);
  });
  if (log != nullptr) {
    Status status = log->Close();
    if (!status.ok()) spdlog::error("closing the append-only log: {}", status.message());
  }
}

std::string Durability::InfoFields() const {
  std::string out;
  auto field = [&out](std::string_view name, const std::string& value) {
    out += name;
    out += ':';
    out += value;
    out += "\r\n";
  };
  int64_t now = NowMs();
  // The log switch before the save flag: a cut sets the flag first, then
  // switches the log, so whoever sees the switch sees the save running (or
  // already ended), never "switched and no save".
  const bool aof_enabled = logging();
  bool bgsave = bgsave_in_progress_.load(std::memory_order_acquire);
  std::shared_ptr<AppendLogWriter> log;
  std::string log_error;
  ServerConfig::AppendFsync policy;
  {
    std::lock_guard lock(mutex_);
    log = log_;
    log_error = last_log_error_;
    policy = fsync_policy_;
  }
  field("loading", loading() ? "1" : "0");
  field("async_loading", "0");
  if (loading()) {
    // Redis's loading_* fields (shown only while loading, as there), and
    // the rate, which Redis leaves to the reader.
    ByteProgress::Figures load = load_progress_.Read(now);
    char percent[32];
    std::snprintf(percent, sizeof(percent), "%.2f", load.percent);
    field("loading_start_time", std::to_string(load.start_ms / 1000));
    field("loading_total_bytes", std::to_string(load.total_bytes));
    field("loading_loaded_bytes", std::to_string(load.done_bytes));
    field("loading_loaded_perc", percent);
    field("loading_eta_seconds", std::to_string(std::max<int64_t>(load.eta_seconds, 0)));
    field("loading_bytes_per_sec", std::to_string(static_cast<uint64_t>(load.bytes_per_second)));
  }
  field("rdb_changes_since_last_save", std::to_string(changes_.load(std::memory_order_relaxed)));
  field("rdb_bgsave_in_progress", bgsave ? "1" : "0");
  field("rdb_last_save_time", std::to_string(last_save_time_s()));
  std::string status = last_save_ok_.load(std::memory_order_relaxed) ? "ok" : "err";
  field("rdb_last_bgsave_status", status);
  field("rdb_last_bgsave_time_sec",
        std::to_string(last_save_duration_ms_.load(std::memory_order_relaxed) < 0
                           ? -1
                           : last_save_duration_ms_.load(std::memory_order_relaxed) / 1000));
  field("rdb_current_bgsave_time_sec",
        bgsave ? std::to_string((now - bgsave_started_ms_.load(std::memory_order_relaxed)) / 1000)
               : "-1");
  field("rdb_saves", std::to_string(saves_.load(std::memory_order_relaxed)));
  if (save_in_progress_.load(std::memory_order_acquire)) {
    ByteProgress::Figures save = save_progress_.Read(now);
    field("current_save_written_bytes", std::to_string(save.done_bytes));
    field("current_save_estimated_bytes", std::to_string(save.total_bytes));
  }
  // Ours for Redis's fork time: the last snapshot cut's pause, in us.
  field("latest_fork_usec", std::to_string(last_cut_usec_.load(std::memory_order_relaxed)));
  field("rdb_last_load_keys_loaded", std::to_string(keys_loaded_.load(std::memory_order_relaxed)));
  field("aof_enabled", aof_enabled ? "1" : "0");
  field("aof_rewrite_in_progress", bgsave ? "1" : "0");
  field("aof_rewrite_scheduled", save_scheduled_.load(std::memory_order_relaxed) ? "1" : "0");
  field("aof_last_write_status", write_error() ? "err" : "ok");
  // Ours: the same facts under plain names, and what Redis has no field for.
  field("last_bgsave_status", status);
  field("last_save_bytes", std::to_string(last_save_bytes_.load(std::memory_order_relaxed)));
  field("last_save_duration_ms",
        std::to_string(last_save_duration_ms_.load(std::memory_order_relaxed)));
  field("last_load_duration_ms", std::to_string(load_duration_ms_.load(std::memory_order_relaxed)));
  field("last_cut_wait_us", std::to_string(last_cut_wait_us_.load(std::memory_order_relaxed)));
  field("last_cut_pause_us", std::to_string(last_cut_pause_us_.load(std::memory_order_relaxed)));
  field("aof_fsync", FormatAppendFsync(policy));
  field("aof_generation", log == nullptr ? "0" : std::to_string(log->generation()));
  field("aof_current_size", log == nullptr ? "0" : std::to_string(log->written_bytes()));
  if (!log_error.empty()) field("aof_last_error", log_error);
  return out;
}

}  // namespace bloomgate
