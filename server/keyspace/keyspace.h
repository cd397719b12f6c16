// The keyspace: a sharded map from key name to a stored filter.
//
// 64 shards, each a hash map behind its own reader/writer mutex; a key's shard
// is the top 6 bits of XXH3-64 of its name. Lookups take one shard's lock
// shared and copy out a shared_ptr, so a reader keeps the filter it found
// alive even if another client deletes or renames the key a moment later,
// and never sees a half-built one. Create, delete and rename take the
// shard(s) exclusively, so they are atomic: a RENAME over an existing name
// replaces the target for every later reader at once.
//
// Expiry: an entry's deadline lives in the entry (read without locks) and in
// a per-shard ordered index (changed under the shard's exclusive lock), so
// the background sweep pops due keys in deadline order instead of scanning.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "filters/any_filter.h"
#include "filters/memory_budget.h"
#include "persistence/codec/codec_registry.h"
#include "server/base/clock.h"
#include "server/keyspace/key_ref.h"
#include "server/keyspace/slot_index.h"

namespace bloomgate {

// A key's type is its filter family, named by the family's persistent kind
// (persistence/codec/filter_kind.h); TypeName (server/catalogue/
// family_registry.h) gives the name TYPE shows.
using KeyType = FilterKind;

// The copy a snapshot takes of a counting or cuckoo filter as it was at the
// cut (see server/durability/durability.h): made by the filter's first writer after the
// cut, or by the saver, whichever comes first.
struct SnapshotCopy {
  AnyFilter filter;    // null inside if the copy could not be allocated
  bool taken = false;  // guarded by the entry's owed-copy stripe until the saver reads it
};

class KeyEntry;

// Where a snapshot cut's captures go (Durability's save job). A cut advances
// the keyspace's capture epoch and then walks the keys without stopping the
// server; every entry that existed at the cut is handed to Capture exactly
// once, under its name at the cut, before anything changes it: by the walk,
// by the first command that finds it, or by whatever removes, renames or
// re-times it first (Keyspace::CaptureLocked). Called with the entry's shard
// lock held (shared or exclusive), from any thread.
class SnapshotCapture {
 public:
  virtual ~SnapshotCapture() = default;
  virtual void Capture(const std::string& name, const std::shared_ptr<KeyEntry>& entry) = 0;
};

class KeyEntry {
 public:
  template <typename Filter>
  explicit KeyEntry(std::unique_ptr<Filter> filter)
      : value_(std::move(filter)), id_(NextId()), last_access_s_(Seconds(NowMs())) {}
  explicit KeyEntry(AnyFilter filter)
      : value_(std::move(filter)), id_(NextId()), last_access_s_(Seconds(NowMs())) {}
  ~KeyEntry();

  // Entries destroyed while their thread held key locks (KeyLocks): should
  // stay 0, since the keyspace hands removed entries to
  // KeyLocks::FreeAfterUnlock. Counted for tests.
  static uint64_t freed_under_key_locks();

  // Unique for the life of the process (WATCH compares it).
  uint64_t id() const { return id_; }

  KeyType type() const { return KindOf(value_); }
  // The stored filter if it is a `Filter`, else null (the key holds another
  // type: WRONGTYPE).
  template <typename Filter>
  Filter* get() const {
    auto* held = std::get_if<std::unique_ptr<Filter>>(&value_);
    return held == nullptr ? nullptr : held->get();
  }
  ScalableBloomFilter* bloom() const { return get<ScalableBloomFilter>(); }
  // The filter whatever its family, for snapshots and the log.
  const AnyFilter& filter() const { return value_; }
  // Puts `filter`, of the same family, in place of the entry's and returns
  // the old one (for the caller to free off the loop): a result built off
  // the loop published into an existing key, which keeps its deadline. Under
  // the key's exclusive lock, by a write that found the entry through
  // FindFilter (so any copy a snapshot owes was taken first).
  AnyFilter ReplaceFilter(AnyFilter filter) {
    AnyFilter old = std::move(value_);
    value_ = std::move(filter);
    MarkModified();
    return old;
  }
  uint64_t MemoryUsage() const;

  // 0 = no deadline; otherwise Unix time in milliseconds.
  int64_t expire_at_ms() const {
    // Relaxed: the deadline is a standalone value, published to other
    // threads under the shard lock when it is set.
    return expire_at_ms_.load(std::memory_order_relaxed);
  }
  bool ExpiredAt(int64_t now_ms) const {
    int64_t at = expire_at_ms();
    return at != 0 && at <= now_ms;
  }
  // Copy-on-write for snapshots. ArmSnapshotCopy is called at a cut, while
  // no command runs (or by a big COPY, under its exclusive key lock); from then on the filter must be copied into `copy`
  // before anything changes it. TakeSnapshotCopy makes that copy if it is
  // still owed, charged to `budget` (a copy counts against maxmemory like
  // any filter, until the snapshot is written): every write command calls it
  // before touching a counting or cuckoo filter (one atomic load when nothing
  // is owed), and the saver calls it for each armed entry, so the copy is
  // exactly the state at the cut. Returns false only when the copy is owed
  // and does not fit: a writer's attempt (`final_attempt` false) then leaves
  // it owed, and the write must be refused, since it would change what the
  // snapshot still needs; the saver's attempt gives up instead (the copy
  // stays null, the save fails, and writers go on). A writer's attempt also
  // waits for reads off the loop (BeginOffLoopRead) to end; a final attempt,
  // which only reads, does not.
  void ArmSnapshotCopy(std::shared_ptr<SnapshotCopy> copy);
  bool TakeSnapshotCopy(MemoryBudget* budget, bool final_attempt);
  bool snapshot_copy_owed() const { return snapshot_armed_.load(std::memory_order_acquire); }
  // Whether any entry owes a snapshot its copy: false outside saves, so the
  // dispatcher's look for a copy to wait for costs one load (no key hashed).
  static bool AnySnapshotCopyOwed();
  // A writer's last attempt at the owed copy did not fit the budget: the
  // next writer retries inline (a refusal costs one failed reservation)
  // instead of waiting for a background copy that would fail the same way.
  bool snapshot_copy_refused() const {
    return snapshot_refused_.load(std::memory_order_acquire);
  }
  // Lets another thread read the filter while nothing changes it, without a
  // copy: between the two calls the entry counts as owing a copy, so its
  // writers park (or wait in TakeSnapshotCopy) as for a copy being made,
  // and a snapshot that armed it, or arms it meanwhile, still gets its copy
  // once the read is over. BeginOffLoopRead is called under the key's
  // exclusive lock (no write is half done); EndOffLoopRead from any thread,
  // once per Begin. Readers of the key go on meanwhile. See EntryReadHold.
  void BeginOffLoopRead();
  void EndOffLoopRead();
  // Whether a read off the loop holds the entry now: its writers park
  // (SnapshotCopier::ShouldPark) whatever its size, since the hold may last
  // a network round trip (MIGRATE), not a copy's few milliseconds.
  bool off_loop_read_held() const { return read_held_.load(std::memory_order_acquire); }

  // Unix seconds of the last command that found the key (Keyspace::Find),
  // or of its creation: OBJECT IDLETIME. Whole seconds because that is all
  // IDLETIME reports; a relaxed load on every find and a relaxed store only
  // when the second changed, so the readers of a hot key share the line
  // read-only and write it at most once a second (no read-modify-write).
  // 32 bits (Unix seconds fit until 2106) so it sits in the padding after
  // the snapshot flags and the entry does not grow.
  int64_t last_access_s() const { return last_access_s_.load(std::memory_order_relaxed); }
  void NoteAccess(int64_t now_ms) {
    const uint32_t now_s = Seconds(now_ms);
    if (last_access_s_.load(std::memory_order_relaxed) != now_s) {
      last_access_s_.store(now_s, std::memory_order_relaxed);
    }
  }
  // RESTORE ... IDLETIME seconds: as if last found `idle_s` seconds ago.
  void SetIdleTime(int64_t now_ms, int64_t idle_s) {
    // Clamped at the epoch: IDLETIME takes any non-negative 64-bit value.
    const int64_t now_s = now_ms / 1000;
    last_access_s_.store(static_cast<uint32_t>(idle_s >= now_s ? 0 : now_s - idle_s),
                         std::memory_order_relaxed);
  }

  // Bumped by every write that changes the entry; SCANDUMP's state tag
  // (server/commands/family_shared/chunk_transfer.cc) compares it.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  void MarkModified() { version_.fetch_add(1, std::memory_order_acq_rel); }
  // A write command reached the entry and changed nothing (BF.ADD of an item
  // already present, CF.DEL of a missing one). Redis signals every key a
  // write command opens (RedisBloom opens them REDISMODULE_WRITE), so WATCH
  // must see it; a dump in progress is still whole, so version() does not
  // move.
  void MarkTouched() { touches_.fetch_add(1, std::memory_order_acq_rel); }
  // What WATCH compares: it moves with every write command that reaches the
  // entry (both counters only grow, so their sum moves when either does).
  uint64_t watch_version() const {
    return version() + touches_.load(std::memory_order_acquire);
  }

 private:
  friend class Keyspace;
  static uint32_t Seconds(int64_t ms) { return static_cast<uint32_t>(ms / 1000); }
  static uint64_t NextId() {
    // Relaxed: only uniqueness matters, and fetch_add gives it.
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }

  AnyFilter value_;
  const uint64_t id_;
  std::atomic<int64_t> expire_at_ms_{0};
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> touches_{0};  // see MarkTouched
  // Set (release) at a cut, cleared (release) once the copy is made; read
  // with acquire so a writer that sees it cleared also sees the copy done.
  std::atomic<bool> snapshot_armed_{false};
  std::atomic<bool> snapshot_refused_{false};
  std::atomic<bool> read_held_{false};  // in the padding before last_access_s_
  std::atomic<uint32_t> last_access_s_;
  // The last cut epoch this entry was captured for, or the epoch current
  // when it was stored (an entry born after a cut is not part of it). Read
  // with acquire on every lookup (one load when already captured), stored
  // with release once the capture is complete, under the entry's capture
  // stripe (Keyspace::CaptureStripe: a lock per entry cost 40 bytes of
  // every key for what happens once per key per cut).
  std::atomic<uint64_t> capture_epoch_{0};
  // The copy owed to a snapshot, and the lock that serialises making it with
  // writers, are not here but in keyspace.cc's owed-copy stripes: a mutex and
  // a shared_ptr cost every key 56 bytes for state that exists only between
  // a cut and the copy. snapshot_armed_ says whether
  // this entry has one there.
};
// 64 bytes: MEMORY USAGE counts it for every key (KeyEntry::MemoryUsage).
static_assert(sizeof(KeyEntry) <= 64);

using EntryPtr = std::shared_ptr<KeyEntry>;

// One KeyEntry::BeginOffLoopRead, ended when this is destroyed or Released:
// a build on another thread that reads a source holds one, so a build that
// never runs (its client gone, the server stopping) cannot leave the
// source's writers waiting.
class EntryReadHold {
 public:
  EntryReadHold() = default;
  // Call under `entry`'s exclusive key lock.
  explicit EntryReadHold(EntryPtr entry) : entry_(std::move(entry)) {
    if (entry_ != nullptr) entry_->BeginOffLoopRead();
  }
  ~EntryReadHold() { Release(); }
  EntryReadHold(EntryReadHold&& other) noexcept = default;
  EntryReadHold& operator=(EntryReadHold&& other) noexcept {
    if (this != &other) {
      Release();
      entry_ = std::move(other.entry_);
    }
    return *this;
  }
  void Release() {
    if (entry_ != nullptr) std::exchange(entry_, nullptr)->EndOffLoopRead();
  }
  const EntryPtr& entry() const { return entry_; }

 private:
  EntryPtr entry_;
};

class KeyLocks;
class LazyFreer;

class Keyspace {
 public:
  static constexpr size_t kShardBits = 6;
  static constexpr size_t kShards = size_t{1} << kShardBits;

  // Every call that names a key takes it as a KeyRef, whose hash picks the
  // shard and the map bucket (the dispatcher hashed it once for the whole
  // command); the string_view forms hash the name first, for callers that
  // hold no KeyRef (start-up replay, tools, tests).

  // The live entry under `key`, or null if there is none or it has expired
  // (an expired entry is removed on the way). Finding a key counts as an
  // access for OBJECT IDLETIME (KeyEntry::NoteAccess); Peek does not.
  EntryPtr Find(const KeyRef& key, int64_t now_ms);
  EntryPtr Find(std::string_view key, int64_t now_ms) { return Find(MakeKeyRef(key), now_ms); }

  // The same without removing an expired entry: for a look outside the
  // key locks (the dispatcher deciding whether a writer must wait for a
  // snapshot copy), which must change nothing.
  EntryPtr Peek(const KeyRef& key, int64_t now_ms) const;

  // Called with the shard locked exclusively, just after an Insert stored a
  // new entry and before any other client can find it: the append-only log
  // records the creation here, so no command on the new key can reach the
  // log before the record that creates it.
  using InsertHook = std::function<void(const std::string& key, const KeyEntry& entry)>;

  // Stores `entry` unless a live entry exists; returns the entry now stored.
  EntryPtr Insert(const KeyRef& key, EntryPtr entry, int64_t now_ms, bool* inserted,
                  const InsertHook& on_inserted = nullptr);
  EntryPtr Insert(std::string_view key, EntryPtr entry, int64_t now_ms, bool* inserted,
                  const InsertHook& on_inserted = nullptr) {
    return Insert(MakeKeyRef(key), std::move(entry), now_ms, inserted, on_inserted);
  }

  // Stores `entry` with deadline `expire_at_ms` (0 = none), replacing any
  // entry under `key`; for loading snapshots and replaying the log.
  void Put(std::string_view key, EntryPtr entry, int64_t expire_at_ms);

  // Removes a live key; true if one was removed.
  bool Erase(const KeyRef& key, int64_t now_ms);
  bool Erase(std::string_view key, int64_t now_ms) { return Erase(MakeKeyRef(key), now_ms); }

  enum class RenameStatus { kOk, kNoSuchKey, kTargetExists };
  // Moves src (with its deadline) to dst, replacing dst unless `nx`.
  RenameStatus Rename(const KeyRef& src, const KeyRef& dst, bool nx, int64_t now_ms);
  RenameStatus Rename(std::string_view src, std::string_view dst, bool nx, int64_t now_ms) {
    return Rename(MakeKeyRef(src), MakeKeyRef(dst), nx, now_ms);
  }

  // Sets (at_ms > 0) or clears (0) a live key's deadline; false if missing.
  bool SetExpire(const KeyRef& key, int64_t at_ms, int64_t now_ms);
  bool SetExpire(std::string_view key, int64_t at_ms, int64_t now_ms) {
    return SetExpire(MakeKeyRef(key), at_ms, now_ms);
  }

  size_t Size() const;
  size_t VolatileCount() const;
  // Whether any key has a deadline: one relaxed load (a hint; the caller
  // holds the keys it asks about, whose deadlines cannot change meanwhile).
  bool HasDeadlines() const { return deadlines_.load(std::memory_order_relaxed) > 0; }
  // Whether `key` is stored with a deadline at or before `now_ms`, i.e. a
  // lookup at `now_ms` would remove it. Changes nothing.
  bool StoredButDue(const KeyRef& key, int64_t now_ms) const;
  void Clear();

  // Calls `visit` for every live key matching `pattern` (glob, "*" for all).
  void ForEachKey(std::string_view pattern, int64_t now_ms,
                  const std::function<void(const std::string&, const EntryPtr&)>& visit) const;

  // SCAN: visits keys in order of their 64-bit name hash, from `cursor` on,
  // until at least `count` keys have been looked at or the shard ends;
  // returns the next cursor (0 when done). A key present for the whole
  // iteration is returned exactly once, whatever else is added or removed.
  uint64_t Scan(uint64_t cursor, size_t count, int64_t now_ms,
                const std::function<void(const std::string&, const EntryPtr&)>& visit) const;

  // Removes up to `max_keys` expired keys; returns how many. With
  // `key_locks` (the running server's sweep) each key is removed holding
  // its stripe exclusively, so its deletion record (ExpiryHook) cannot land
  // in the log ahead of a write to it that is still running; without (start-
  // up, tests) the shard lock alone.
  size_t SweepExpired(int64_t now_ms, size_t max_keys, KeyLocks* key_locks = nullptr);

  // Called with the shard locked exclusively whenever an expired entry is
  // removed (on access, by the sweep, or under a key being created, renamed
  // onto or deleted): the journal records the expiry as a deletion, as Redis
  // propagates a DEL, so the log and a replica know the key is gone. Set
  // once, before serving.
  using ExpiryHook = std::function<void(const std::string& key, int64_t now_ms)>;
  void set_expiry_hook(ExpiryHook hook) { expiry_hook_ = std::move(hook); }
  // Where removed big filters are freed (server/keyspace/lazy_freer.h);
  // null: on the remover's thread once its key locks are released. Set
  // once, before serving.
  void set_lazy_freer(LazyFreer* freer) { lazy_freer_ = freer; }

  // --- the snapshot cut (server/durability/durability.h) ----------------
  // Starts cut `epoch` = the previous + 1 and returns it; called while no
  // command runs (the cut holds every key lock), so each entry is either
  // older than the cut (owed to `sink`) or stored after it. O(1).
  uint64_t BeginCapture(SnapshotCapture* sink);
  // The walk: captures every entry not captured yet, shard by shard, in
  // batches of kCaptureBatch keys, each under its shard's shared lock alone
  // (no key lock: commands run on meanwhile). Any thread may call it;
  // FLUSHALL uses it to finish the walk before it drops everything.
  void CaptureRemaining();
  // After CaptureRemaining: every entry of the cut has been captured, so no
  // more will be; forgets the sink.
  void EndCapture();
  // Keys per batch of the walk: at ~0.3 us a capture, 256 keys hold a
  // shard's lock (shared) for well under 0.1 ms.
  static constexpr size_t kCaptureBatch = 256;

  // CLIENT PAUSE (WRITE or ALL) until `until_ms` (0: no longer): as Redis,
  // no expired key is deleted meanwhile. Find reports an expired key as
  // missing but leaves it (and expired_keys) alone, the sweep removes
  // nothing; writes that replace an expired key still do.
  void HoldExpiry(int64_t until_ms) {
    expiry_held_until_ms_.store(until_ms, std::memory_order_relaxed);
  }
  bool ExpiryHeld(int64_t now_ms) const {
    return now_ms < expiry_held_until_ms_.load(std::memory_order_relaxed) ||
           held_as_replica_.load(std::memory_order_relaxed);
  }
  // A replica holds expiry the same way for as long as it is one: its
  // primary's DEL removes an expired key, never its own clock.
  void HoldExpiryAsReplica(bool held) { held_as_replica_.store(held, std::memory_order_relaxed); }
  bool expiry_held_as_replica() const { return held_as_replica_.load(std::memory_order_relaxed); }

  // Cluster mode: from now on every key is also kept in its hash slot's
  // set (server/keyspace/slot_index.h; ~40 bytes a key), the keys already
  // stored included. Called once, before serving (main.cc, when
  // cluster-enabled is on).
  void EnableSlotIndex();
  // The index, or null when cluster mode is off.
  const SlotIndex* slot_index() const { return slot_index_.get(); }

  // Removes `key` if the entry stored under it is still `expected` and live;
  // `on_erased` runs with the shard still locked (the journal records the
  // deletion there, so no later creation of the name can be logged ahead of
  // it). For a removal decided outside the key's locks: MIGRATE's, once the
  // target holds the key and its writers are held off (BeginOffLoopRead).
  bool EraseIfSame(const KeyRef& key, const KeyEntry* expected, int64_t now_ms,
                   const std::function<void(const std::string& key)>& on_erased);

  uint64_t expired_keys() const { return expired_keys_.load(std::memory_order_relaxed); }
  // Index entries SCAN has stepped over since start-up: the work a SCAN
  // costs, counted so a test can bound it without timing anything.
  uint64_t scan_steps() const { return scan_steps_.load(std::memory_order_relaxed); }

 private:
  // A map key carries its name's hash, so neither storing nor finding a
  // name hashes it again.
  struct StoredKey {
    std::string name;
    uint64_t hash;
  };
  // noexcept, so libstdc++ does not cache the hash in every map node beside
  // the StoredKey's own copy of it (a node is 64 bytes instead of 72).
  struct NameHash {
    using is_transparent = void;
    size_t operator()(const StoredKey& key) const noexcept {
      return static_cast<size_t>(key.hash);
    }
    size_t operator()(const KeyRef& key) const noexcept { return static_cast<size_t>(key.hash); }
  };
  struct NameEqual {
    using is_transparent = void;
    bool operator()(const StoredKey& a, const StoredKey& b) const { return a.name == b.name; }
    bool operator()(const StoredKey& a, const KeyRef& b) const {
      return a.hash == b.hash && a.name == b.name;
    }
    bool operator()(const KeyRef& a, const StoredKey& b) const { return (*this)(b, a); }
  };
  using EntryMap = std::unordered_map<StoredKey, EntryPtr, NameHash, NameEqual>;
  struct Shard {
    mutable std::shared_mutex mutex;
    EntryMap entries;
    // The same entries in SCAN's cursor order: (name hash, map node). Map
    // nodes never move, so the pointer stays valid until the key is erased.
    // Kept up to date by every insert and erase (O(log n), ~64 bytes a key)
    // so that a SCAN call costs O(log n + COUNT) instead of sorting the
    // whole shard: sorting, a full SCAN of 80k keys took 9 s.
    std::set<std::pair<uint64_t, const EntryMap::value_type*>> scan_order;
    std::set<std::pair<int64_t, std::string>> deadlines;
  };

  static size_t ShardIndex(uint64_t hash) { return hash >> (64 - kShardBits); }
  Shard& ShardFor(const KeyRef& key) { return shards_[ShardIndex(key.hash)]; }
  // Under the shard's exclusive lock. EmplaceLocked stores a name known to
  // be absent; EraseLocked removes the entry from the map and both indexes.
  EntryMap::iterator EmplaceLocked(Shard& shard, const KeyRef& key, EntryPtr entry);
  void EraseLocked(Shard& shard, EntryMap::iterator it);
  void SetDeadlineLocked(Shard& shard, const std::string& name, KeyEntry& entry,
                         int64_t at_ms);

  // Under the entry's shard lock: hands `entry` (stored under `name`) to the
  // cut being walked if it has not been captured for it yet. One acquire
  // load of the entry's epoch and one of the keyspace's when it has.
  void CaptureLocked(const std::string& name, const EntryPtr& entry) const;

  // Counts an expired entry just removed and tells the hook.
  void ExpiredLocked(const std::string& name, int64_t now_ms);

  // One capture of an entry at a time: the stripe of its address. Striped
  // rather than per entry, because a mutex per entry costs every key 40
  // bytes for a lock taken once per key per cut; 64 stripes, so the walk and
  // the commands that capture ahead of it rarely meet on one. Nothing is
  // captured while a stripe is held (SnapshotCapture::Capture describes or
  // arms one entry), so two stripes are never held at once.
  static constexpr int kCaptureStripeBits = 6;
  static constexpr size_t kCaptureStripes = size_t{1} << kCaptureStripeBits;
  std::mutex& CaptureStripe(const KeyEntry* entry) const {
    // Entries are >= 64-byte heap objects: drop the low bits, mix the rest.
    const auto address = reinterpret_cast<uintptr_t>(entry) >> 6;
    return capture_stripes_[(address * 0x9e3779b97f4a7c15ull) >> (64 - kCaptureStripeBits)];
  }

  std::array<Shard, kShards> shards_;
  std::unique_ptr<SlotIndex> slot_index_;  // null unless cluster mode is on
  ExpiryHook expiry_hook_;
  LazyFreer* lazy_freer_ = nullptr;
  // The cut being walked: its epoch (0 before the first) and its sink (null
  // once its walk is done).
  std::atomic<uint64_t> capture_epoch_{0};
  std::atomic<SnapshotCapture*> capture_sink_{nullptr};
  std::atomic<uint64_t> expired_keys_{0};
  std::atomic<int64_t> expiry_held_until_ms_{0};
  std::atomic<bool> held_as_replica_{false};
  std::atomic<int64_t> deadlines_{0};  // entries with a deadline, all shards
  mutable std::atomic<uint64_t> scan_steps_{0};
  mutable std::array<std::mutex, kCaptureStripes> capture_stripes_;

 public:
  // What the map holds for a key beyond its entry: the node (its next
  // pointer, the StoredKey and the EntryPtr). KeyEntry::MemoryUsage counts
  // it; the SCAN index's node and the key's share of the bucket array it
  // does not (as Redis's MEMORY USAGE counts the dict entry, not the
  // dict's table).
  static constexpr uint64_t kMapNodeBytes = sizeof(void*) + sizeof(EntryMap::value_type);
};

}  // namespace bloomgate
