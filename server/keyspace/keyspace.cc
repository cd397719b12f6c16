#include "server/keyspace/keyspace.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <mutex>
#include <unordered_map>
#include <xxhash.h>

#include "persistence/filter_codec.h"
#include "server/base/glob.h"
#include "server/keyspace/entry_read_waiters.h"
#include "server/keyspace/key_locks.h"
#include "server/keyspace/key_ref.h"
#include "server/keyspace/lazy_freer.h"

namespace bloomgate {

namespace {

// libstdc++'s std::make_shared block: the control block (vtable pointer,
// use and weak counts) in front of the object.
constexpr uint64_t kSharedControlBytes = sizeof(void*) + 2 * sizeof(int);

std::atomic<uint64_t> entries_freed_under_key_locks{0};
// Entries armed and not yet copied (KeyEntry::AnySnapshotCopyOwed). Relaxed:
// a hint for who waits where; each entry's own flag decides.
std::atomic<int64_t> entries_owing_copies{0};
// Cuts whose walk has not finished: an entry not captured yet is armed by
// its first lookup, so until the walk ends the dispatcher must look for a
// copy to park on (test_snapshot_copy.py: else the first write after a
// BGSAVE copied a big filter on its event loop, 663 ms).
std::atomic<int64_t> cuts_being_walked{0};

// The snapshot copies entries owe (KeyEntry::ArmSnapshotCopy), by entry, in
// 64 stripes of the entry's address: one entry's copy is made by one thread
// at a time while its writers and the saver wait, as a mutex in every entry
// did (56 bytes of every key, with the copy's pointer). A copy is made with
// its stripe UNLOCKED, the entry marked `copying` meanwhile: a big copy must
// not hold up arming or copying the other entries that share the stripe
// (the snapshot copier makes copies of 1 MiB and more while commands on
// other keys go on).
struct OwedCopyStripe {
  struct Owed {
    std::shared_ptr<SnapshotCopy> copy;  // null while only read holds keep the record
    bool copying = false;  // a thread is making the copy, the stripe unlocked
    uint32_t readers = 0;  // KeyEntry::BeginOffLoopRead not ended yet
    // CallWhenReadsEnd's writers (entry_read_waiters.h), called when
    // `readers` reaches 0.
    std::vector<std::function<void()>> read_waiters;
  };
  std::mutex mutex;
  std::condition_variable copy_done;  // some `copying` of this stripe ended
  std::unordered_map<const KeyEntry*, Owed> owed;  // guarded by mutex
};

OwedCopyStripe& OwedCopiesOf(const KeyEntry* entry) {
  constexpr int kStripeBits = 6;
  // Never destroyed: an entry may be freed during static destruction.
  static auto* const stripes = new std::array<OwedCopyStripe, size_t{1} << kStripeBits>;
  // Entries are 64-byte heap objects: drop the low bits, mix the rest.
  const auto address = reinterpret_cast<uintptr_t>(entry) >> 6;
  return (*stripes)[(address * 0x9e3779b97f4a7c15ull) >> (64 - kStripeBits)];
}

// A removed entry (or a whole shard's map), declared before the shard lock
// so that it outlives it. A big filter (LazyFreer::kLazyFreeBytes) and a
// flushed shard go to the lazy freer's thread; anything else to
// KeyLocks::FreeAfterUnlock: freed once the command's key locks are
// released too, or at once outside any.
template <typename T>
struct FreedAfterUnlock {
  LazyFreer* freer = nullptr;
  T value{};
  ~FreedAfterUnlock() {
    if constexpr (std::is_same_v<T, EntryPtr>) {
      if (value != nullptr && freer != nullptr &&
          value->MemoryUsage() >= LazyFreer::kLazyFreeBytes) {
        freer->Free(std::move(value));
      } else {
        KeyLocks::FreeAfterUnlock(std::move(value));
      }
    } else if (!value.empty()) {
      if (freer != nullptr) {
        freer->Free(std::make_shared<T>(std::move(value)));
      } else {
        KeyLocks::FreeAfterUnlock(std::make_shared<T>(std::move(value)));
      }
    }
  }
};

}  // namespace

KeyEntry::~KeyEntry() {
  // Relaxed: nobody else holds the entry any more, so no copy is running.
  if (snapshot_armed_.load(std::memory_order_relaxed)) {
    OwedCopyStripe& stripe = OwedCopiesOf(this);
    std::lock_guard lock(stripe.mutex);
    if (stripe.owed.erase(this) != 0) entries_owing_copies.fetch_sub(1, std::memory_order_relaxed);
  }
  if (KeyLocks::HeldByThisThread() != 0) {
    // Relaxed: a test-visible count, publishes nothing.
    entries_freed_under_key_locks.fetch_add(1, std::memory_order_relaxed);
  }
}

uint64_t KeyEntry::freed_under_key_locks() {
  return entries_freed_under_key_locks.load(std::memory_order_relaxed);
}

uint64_t KeyEntry::MemoryUsage() const {
  // The entry's one allocation (make_shared: the entry and the shared_ptr
  // control block's two counts and vtable pointer, 16 bytes) plus the map
  // node that holds it. alloc_test checks both against operator new.
  constexpr uint64_t kEntryOverhead =
      sizeof(KeyEntry) + kSharedControlBytes + Keyspace::kMapNodeBytes;
  return std::visit([](const auto& value) { return value->memory_bytes(); }, value_) +
         kEntryOverhead;
}

bool KeyEntry::AnySnapshotCopyOwed() {
  return entries_owing_copies.load(std::memory_order_relaxed) > 0 ||
         cuts_being_walked.load(std::memory_order_relaxed) > 0;
}

void KeyEntry::ArmSnapshotCopy(std::shared_ptr<SnapshotCopy> copy) {
  OwedCopyStripe& stripe = OwedCopiesOf(this);
  std::unique_lock lock(stripe.mutex);
  // A copy still being made for this entry finishes first, as under a mutex
  // of the entry's own.
  for (auto it = stripe.owed.find(this); it != stripe.owed.end() && it->second.copying;
       it = stripe.owed.find(this)) {
    stripe.copy_done.wait(lock);
  }
  auto [it, fresh] = stripe.owed.try_emplace(this);
  if (fresh) entries_owing_copies.fetch_add(1, std::memory_order_relaxed);
  it->second.copy = std::move(copy);
  snapshot_refused_.store(false, std::memory_order_release);
  snapshot_armed_.store(true, std::memory_order_release);
}

bool KeyEntry::TakeSnapshotCopy(MemoryBudget* budget, bool final_attempt) {
  if (!snapshot_armed_.load(std::memory_order_acquire)) return true;
  OwedCopyStripe& stripe = OwedCopiesOf(this);
  std::unique_lock lock(stripe.mutex);
  auto it = stripe.owed.find(this);
  // Another thread is making the copy: wait for its outcome. A writer (not
  // a final attempt) also waits for reads off the loop to end; the saver
  // and COPY's maker only read, beside them, and must not wait: the filter
  // maker that would end a read may be queued behind COPY's.
  while (it != stripe.owed.end() &&
         (it->second.copying || (!final_attempt && it->second.readers > 0))) {
    stripe.copy_done.wait(lock);
    it = stripe.owed.find(this);
  }
  if (it == stripe.owed.end()) return true;  // another thread made it meanwhile
  if (it->second.copy == nullptr) {
    // Only read holds keep the record: no copy is owed.
    if (it->second.readers > 0) return true;
    stripe.owed.erase(it);
    entries_owing_copies.fetch_sub(1, std::memory_order_relaxed);
    snapshot_armed_.store(false, std::memory_order_release);
    return true;
  }
  it->second.copying = true;
  lock.unlock();
  AnyFilter copy = CloneFilter(value_, budget);
  const bool made = std::visit([](const auto& filter) { return filter != nullptr; }, copy);
  lock.lock();
  // Found again: other entries' arming may have rehashed the map meanwhile.
  it = stripe.owed.find(this);
  it->second.copying = false;
  stripe.copy_done.notify_all();
  if (!made && !final_attempt) {
    snapshot_refused_.store(true, std::memory_order_release);
    return false;
  }
  it->second.copy->filter = std::move(copy);
  it->second.copy->taken = true;
  snapshot_refused_.store(false, std::memory_order_release);
  if (it->second.readers > 0) {
    // A read off the loop began while the copy was made: the entry stays
    // held until it ends (EndOffLoopRead disarms it then).
    it->second.copy.reset();
    return made;
  }
  stripe.owed.erase(it);
  entries_owing_copies.fetch_sub(1, std::memory_order_relaxed);
  snapshot_armed_.store(false, std::memory_order_release);
  return made;
}

void KeyEntry::BeginOffLoopRead() {
  OwedCopyStripe& stripe = OwedCopiesOf(this);
  std::lock_guard lock(stripe.mutex);
  // A copy being made meanwhile reads the filter too: no need to wait.
  auto [it, fresh] = stripe.owed.try_emplace(this);
  if (fresh) entries_owing_copies.fetch_add(1, std::memory_order_relaxed);
  ++it->second.readers;
  read_held_.store(true, std::memory_order_release);
  snapshot_armed_.store(true, std::memory_order_release);
}

void KeyEntry::EndOffLoopRead() {
  OwedCopyStripe& stripe = OwedCopiesOf(this);
  std::vector<std::function<void()>> waiters;  // called after the stripe's lock
  {
    std::lock_guard lock(stripe.mutex);
    auto it = stripe.owed.find(this);
    if (it == stripe.owed.end() || it->second.readers == 0) return;  // unpaired: nothing held
    if (--it->second.readers == 0) {
      read_held_.store(false, std::memory_order_release);
      waiters.swap(it->second.read_waiters);
    }
    if (it->second.readers == 0 && it->second.copy == nullptr && !it->second.copying) {
      // No snapshot owes a copy: the entry is free to write again.
      stripe.owed.erase(it);
      entries_owing_copies.fetch_sub(1, std::memory_order_relaxed);
      snapshot_armed_.store(false, std::memory_order_release);
    }
    stripe.copy_done.notify_all();
  }
  for (auto& waiter : waiters) waiter();
}

bool CallWhenReadsEnd(KeyEntry& entry, const std::function<void()>& done) {
  OwedCopyStripe& stripe = OwedCopiesOf(&entry);
  std::lock_guard lock(stripe.mutex);
  auto it = stripe.owed.find(&entry);
  if (it == stripe.owed.end() || it->second.readers == 0) return false;
  it->second.read_waiters.push_back(done);
  return true;
}

EntryPtr Keyspace::Find(const KeyRef& key, int64_t now_ms) {
  Shard& shard = ShardFor(key);
  {
    std::shared_lock lock(shard.mutex);
    auto it = shard.entries.find(key);
    if (it == shard.entries.end()) return nullptr;
    if (!it->second->ExpiredAt(now_ms)) {
      it->second->NoteAccess(now_ms);
      CaptureLocked(it->first.name, it->second);
      return it->second;
    }
    if (ExpiryHeld(now_ms)) return nullptr;  // gone for readers, deleted after the pause
  }
  // Expired: remove it, unless someone replaced it in the meantime. The
  // entry is freed after the lock is released (a filter can be gigabytes).
  FreedAfterUnlock<EntryPtr> doomed{lazy_freer_};
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return nullptr;
  CaptureLocked(it->first.name, it->second);
  if (!it->second->ExpiredAt(now_ms)) return it->second;
  doomed.value = it->second;
  std::string name = it->first.name;
  EraseLocked(shard, it);
  ExpiredLocked(name, now_ms);
  return nullptr;
}

void Keyspace::CaptureLocked(const std::string& name, const EntryPtr& entry) const {
  // Acquire on both: a thread that sees the entry captured must also see
  // what the capture did (a copy armed, counts described) before it writes.
  const uint64_t epoch = capture_epoch_.load(std::memory_order_acquire);
  if (entry->capture_epoch_.load(std::memory_order_acquire) >= epoch) return;
  std::lock_guard lock(CaptureStripe(entry.get()));
  if (entry->capture_epoch_.load(std::memory_order_relaxed) >= epoch) return;  // beaten to it
  if (SnapshotCapture* sink = capture_sink_.load(std::memory_order_acquire)) {
    sink->Capture(name, entry);
  }
  entry->capture_epoch_.store(epoch, std::memory_order_release);
}

uint64_t Keyspace::BeginCapture(SnapshotCapture* sink) {
  cuts_being_walked.fetch_add(1, std::memory_order_relaxed);
  capture_sink_.store(sink, std::memory_order_release);
  // Release: a command that reads the new epoch also sees the sink.
  return capture_epoch_.fetch_add(1, std::memory_order_acq_rel) + 1;
}

void Keyspace::CaptureRemaining() {
  for (const Shard& shard : shards_) {
    // Resumes by name hash, as SCAN does, so the shard lock can be let go
    // between batches (creations and deletions in this shard wait at most
    // one batch); keys with equal hashes are taken in one batch.
    uint64_t from = 0;
    bool done = false;
    while (!done) {
      std::shared_lock lock(shard.mutex);
      auto it = shard.scan_order.lower_bound({from, nullptr});
      size_t taken = 0;
      while (it != shard.scan_order.end() && taken < kCaptureBatch) {
        const uint64_t hash = it->first;
        for (; it != shard.scan_order.end() && it->first == hash; ++it, ++taken) {
          CaptureLocked(it->second->first.name, it->second->second);
        }
        if (hash == UINT64_MAX) {
          it = shard.scan_order.end();
          break;
        }
        from = hash + 1;
      }
      done = it == shard.scan_order.end();
    }
  }
}

void Keyspace::EndCapture() {
  capture_sink_.store(nullptr, std::memory_order_release);
  cuts_being_walked.fetch_sub(1, std::memory_order_relaxed);
}

void Keyspace::ExpiredLocked(const std::string& name, int64_t now_ms) {
  expired_keys_.fetch_add(1, std::memory_order_relaxed);
  if (expiry_hook_) expiry_hook_(name, now_ms);
}

EntryPtr Keyspace::Peek(const KeyRef& key, int64_t now_ms) const {
  const Shard& shard = shards_[ShardIndex(key.hash)];
  std::shared_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end() || it->second->ExpiredAt(now_ms)) return nullptr;
  // Not a change of the keyspace: a capture only does early what the
  // writer about to be parked would do first (and the copier needs the
  // entry armed to make its copy).
  CaptureLocked(it->first.name, it->second);
  return it->second;
}

bool Keyspace::StoredButDue(const KeyRef& key, int64_t now_ms) const {
  const Shard& shard = shards_[ShardIndex(key.hash)];
  std::shared_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  return it != shard.entries.end() && it->second->ExpiredAt(now_ms);
}

EntryPtr Keyspace::Insert(const KeyRef& key, EntryPtr entry, int64_t now_ms,
                          bool* inserted, const InsertHook& on_inserted) {
  Shard& shard = ShardFor(key);
  FreedAfterUnlock<EntryPtr> doomed{lazy_freer_};  // an expired entry, freed after the lock is released
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it != shard.entries.end()) {
    CaptureLocked(it->first.name, it->second);
    if (!it->second->ExpiredAt(now_ms)) {
      *inserted = false;
      return it->second;
    }
    doomed.value = it->second;
    std::string name = it->first.name;
    EraseLocked(shard, it);
    ExpiredLocked(name, now_ms);  // logged before the creation that follows
  }
  auto stored = EmplaceLocked(shard, key, entry);
  *inserted = true;
  if (on_inserted) on_inserted(stored->first.name, *entry);
  return entry;
}

void Keyspace::Put(std::string_view name, EntryPtr entry, int64_t expire_at_ms) {
  KeyRef key = MakeKeyRef(name);
  Shard& shard = ShardFor(key);
  FreedAfterUnlock<EntryPtr> doomed{lazy_freer_};  // a replaced entry, freed after the lock is released
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it != shard.entries.end()) {
    CaptureLocked(it->first.name, it->second);
    doomed.value = it->second;
    EraseLocked(shard, it);
  }
  auto stored = EmplaceLocked(shard, key, std::move(entry));
  if (expire_at_ms != 0) {
    SetDeadlineLocked(shard, stored->first.name, *stored->second, expire_at_ms);
  }
}

Keyspace::EntryMap::iterator Keyspace::EmplaceLocked(Shard& shard, const KeyRef& key,
                                                     EntryPtr entry) {
  auto it =
      shard.entries.emplace(StoredKey{std::string(key.name), key.hash}, std::move(entry)).first;
  shard.scan_order.emplace(key.hash, &*it);
  if (slot_index_ != nullptr) slot_index_->Add(&it->first.name);
  // Stored now: no part of a cut already taken. (A renamed entry was
  // captured for that cut before it moved, so this changes nothing for it.)
  it->second->capture_epoch_.store(capture_epoch_.load(std::memory_order_acquire),
                                   std::memory_order_release);
  return it;
}

void Keyspace::EraseLocked(Shard& shard, EntryMap::iterator it) {
  int64_t at = it->second->expire_at_ms();
  if (at != 0) {
    shard.deadlines.erase({at, it->first.name});
    deadlines_.fetch_sub(1, std::memory_order_relaxed);
  }
  shard.scan_order.erase({it->first.hash, &*it});
  if (slot_index_ != nullptr) slot_index_->Remove(&it->first.name);
  // A reader holding the entry still sees it as it was; WATCHers see the
  // change because the entry under the name is no longer the one they hold.
  it->second->MarkModified();
  shard.entries.erase(it);
}

bool Keyspace::Erase(const KeyRef& key, int64_t now_ms) {
  Shard& shard = ShardFor(key);
  FreedAfterUnlock<EntryPtr> doomed{lazy_freer_};  // destroyed after the lock is released
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end()) return false;
  CaptureLocked(it->first.name, it->second);  // the cut keeps what the DEL takes
  bool live = !it->second->ExpiredAt(now_ms);
  doomed.value = it->second;
  std::string name = it->first.name;
  EraseLocked(shard, it);
  if (!live) ExpiredLocked(name, now_ms);
  lock.unlock();
  return live;
}

bool Keyspace::EraseIfSame(const KeyRef& key, const KeyEntry* expected, int64_t now_ms,
                           const std::function<void(const std::string& key)>& on_erased) {
  Shard& shard = ShardFor(key);
  FreedAfterUnlock<EntryPtr> doomed{lazy_freer_};  // destroyed after the lock is released
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end() || it->second.get() != expected ||
      it->second->ExpiredAt(now_ms)) {
    return false;
  }
  CaptureLocked(it->first.name, it->second);
  doomed.value = it->second;
  std::string name = it->first.name;
  EraseLocked(shard, it);
  if (on_erased) on_erased(name);
  return true;
}

void Keyspace::EnableSlotIndex() {
  if (slot_index_ != nullptr) return;
  auto index = std::make_unique<SlotIndex>();
  for (Shard& shard : shards_) {
    std::unique_lock lock(shard.mutex);
    for (const auto& [stored, entry] : shard.entries) index->Add(&stored.name);
  }
  slot_index_ = std::move(index);
}

void Keyspace::SetDeadlineLocked(Shard& shard, const std::string& name, KeyEntry& entry,
                                 int64_t at_ms) {
  int64_t old = entry.expire_at_ms();
  // Relaxed: a gauge (HasDeadlines), read by lockers of the keys it counts.
  if (old != 0) {
    shard.deadlines.erase({old, name});
    deadlines_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (at_ms != 0) {
    shard.deadlines.emplace(at_ms, name);
    deadlines_.fetch_add(1, std::memory_order_relaxed);
  }
  entry.expire_at_ms_.store(at_ms, std::memory_order_relaxed);
}

Keyspace::RenameStatus Keyspace::Rename(const KeyRef& src, const KeyRef& dst, bool nx,
                                        int64_t now_ms) {
  size_t src_index = ShardIndex(src.hash);
  size_t dst_index = ShardIndex(dst.hash);
  // A replaced target is freed after the locks are released: declared
  // before them, it is destroyed after them.
  FreedAfterUnlock<EntryPtr> replaced{lazy_freer_};
  // Lock both shards in index order so two renames can never deadlock.
  std::unique_lock<std::shared_mutex> first(shards_[std::min(src_index, dst_index)].mutex);
  std::unique_lock<std::shared_mutex> second;
  if (src_index != dst_index) {
    second = std::unique_lock<std::shared_mutex>(shards_[std::max(src_index, dst_index)].mutex);
  }
  Shard& src_shard = shards_[src_index];
  Shard& dst_shard = shards_[dst_index];
  auto src_it = src_shard.entries.find(src);
  if (src_it == src_shard.entries.end() || src_it->second->ExpiredAt(now_ms)) {
    return RenameStatus::kNoSuchKey;
  }
  // A cut being walked gets both keys under their names before the move.
  CaptureLocked(src_it->first.name, src_it->second);
  if (src.name == dst.name) return nx ? RenameStatus::kTargetExists : RenameStatus::kOk;
  auto dst_it = dst_shard.entries.find(dst);
  if (dst_it != dst_shard.entries.end()) {
    CaptureLocked(dst_it->first.name, dst_it->second);
    bool expired = dst_it->second->ExpiredAt(now_ms);
    if (nx && !expired) return RenameStatus::kTargetExists;
    replaced.value = dst_it->second;
    EraseLocked(dst_shard, dst_it);
    if (expired) ExpiredLocked(std::string(dst.name), now_ms);
  }
  EntryPtr moving = src_it->second;
  int64_t deadline = moving->expire_at_ms();
  if (deadline != 0) src_shard.deadlines.erase({deadline, src_it->first.name});
  src_shard.scan_order.erase({src_it->first.hash, &*src_it});
  if (slot_index_ != nullptr) slot_index_->Remove(&src_it->first.name);
  src_shard.entries.erase(src_it);
  auto it = EmplaceLocked(dst_shard, dst, moving);
  if (deadline != 0) dst_shard.deadlines.emplace(deadline, it->first.name);
  moving->MarkModified();
  return RenameStatus::kOk;
}

bool Keyspace::SetExpire(const KeyRef& key, int64_t at_ms, int64_t now_ms) {
  Shard& shard = ShardFor(key);
  std::unique_lock lock(shard.mutex);
  auto it = shard.entries.find(key);
  if (it == shard.entries.end() || it->second->ExpiredAt(now_ms)) return false;
  CaptureLocked(it->first.name, it->second);  // with the deadline it had at the cut
  SetDeadlineLocked(shard, it->first.name, *it->second, at_ms);
  it->second->MarkModified();
  return true;
}

size_t Keyspace::Size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::shared_lock lock(shard.mutex);
    total += shard.entries.size();
  }
  return total;
}

size_t Keyspace::VolatileCount() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::shared_lock lock(shard.mutex);
    total += shard.deadlines.size();
  }
  return total;
}

void Keyspace::Clear() {
  for (Shard& shard : shards_) {
    FreedAfterUnlock<EntryMap> doomed{lazy_freer_};  // freed after the locks are released
    {
      std::unique_lock lock(shard.mutex);
      for (auto& [key, entry] : shard.entries) {
        CaptureLocked(key.name, entry);
        entry->MarkModified();
        if (slot_index_ != nullptr) slot_index_->Remove(&key.name);
      }
      doomed.value.swap(shard.entries);
      deadlines_.fetch_sub(static_cast<int64_t>(shard.deadlines.size()),
                           std::memory_order_relaxed);
      shard.scan_order.clear();
      shard.deadlines.clear();
    }
  }
}

void Keyspace::ForEachKey(
    std::string_view pattern, int64_t now_ms,
    const std::function<void(const std::string&, const EntryPtr&)>& visit) const {
  bool all = pattern == "*";
  for (const Shard& shard : shards_) {
    std::shared_lock lock(shard.mutex);
    for (const auto& [key, entry] : shard.entries) {
      if (entry->ExpiredAt(now_ms)) continue;
      if (all || GlobMatch(pattern, key.name)) visit(key.name, entry);
    }
  }
}

uint64_t Keyspace::Scan(
    uint64_t cursor, size_t count, int64_t now_ms,
    const std::function<void(const std::string&, const EntryPtr&)>& visit) const {
  size_t shard_index = cursor >> (64 - kShardBits);
  // Copied out under the shard lock, visited after it is released.
  std::vector<std::pair<std::string, EntryPtr>> batch;
  size_t looked_at = 0;
  uint64_t next = 0;  // 0: the iteration is complete
  while (shard_index < kShards) {
    const Shard& shard = shards_[shard_index];
    bool cut = false;
    uint64_t steps = 0;
    {
      std::shared_lock lock(shard.mutex);
      auto it = shard.scan_order.lower_bound({cursor, nullptr});
      while (it != shard.scan_order.end()) {
        // Keys with equal hashes go out together so the cursor never splits them.
        uint64_t hash = it->first;
        for (; it != shard.scan_order.end() && it->first == hash; ++it) {
          ++steps;
          ++looked_at;
          batch.emplace_back(it->second->first.name, it->second->second);
        }
        if (looked_at >= count) {
          next = hash == UINT64_MAX ? 0 : hash + 1;
          cut = true;
          break;
        }
      }
    }
    scan_steps_.fetch_add(steps, std::memory_order_relaxed);
    if (cut) break;
    ++shard_index;
    if (shard_index == kShards) break;
    cursor = static_cast<uint64_t>(shard_index) << (64 - kShardBits);
    if (looked_at >= count) {
      next = cursor;
      break;
    }
  }
  for (const auto& [name, entry] : batch) {
    if (!entry->ExpiredAt(now_ms)) visit(name, entry);
  }
  return next;
}

size_t Keyspace::SweepExpired(int64_t now_ms, size_t max_keys, KeyLocks* key_locks) {
  // Redis stops its active expire cycle during a pause, so the data set a
  // switch-over copies stays as it was.
  if (ExpiryHeld(now_ms)) return 0;
  size_t removed = 0;
  for (Shard& shard : shards_) {
    if (removed >= max_keys) break;
    std::vector<EntryPtr> doomed;  // freed after the lock is released
    std::vector<std::string> due;  // with key_locks: removed below, one by one
    std::unique_lock lock(shard.mutex);
    auto next = shard.deadlines.begin();
    while (removed + due.size() < max_keys && next != shard.deadlines.end() &&
           next->first <= now_ms) {
      if (key_locks != nullptr) {
        due.push_back((next++)->second);
        continue;
      }
      // A background sweep: hashing the name again here costs no command.
      auto it = shard.entries.find(MakeKeyRef(next->second));
      if (it == shard.entries.end()) {  // cannot happen; keep the index honest
        next = shard.deadlines.erase(next);
        continue;
      }
      CaptureLocked(it->first.name, it->second);
      doomed.push_back(it->second);
      std::string name = it->first.name;
      EraseLocked(shard, it);
      ExpiredLocked(name, now_ms);
      ++removed;
      next = shard.deadlines.begin();
    }
    lock.unlock();
    for (const std::string& name : due) {
      // Key lock first, then the shard lock, as every command takes them. A
      // key given a new deadline or replaced meanwhile is live and stays.
      KeyRef key = MakeKeyRef(name);
      KeyLocks::Guard guard = key_locks->Lock({KeyLocks::StripeOf(key)}, /*exclusive=*/true);
      FreedAfterUnlock<EntryPtr> entry{lazy_freer_};  // freed after both locks are released
      std::unique_lock again(shard.mutex);
      auto it = shard.entries.find(key);
      if (it == shard.entries.end() || !it->second->ExpiredAt(now_ms)) continue;
      CaptureLocked(it->first.name, it->second);
      entry.value = it->second;
      EraseLocked(shard, it);
      ExpiredLocked(name, now_ms);
      ++removed;
    }
  }
  return removed;
}

}  // namespace bloomgate
