#include "filters/cuckoo_filter.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>

#include "filters/block_words.h"
#include "filters/hash_seed.h"
#include "filters/memory_reservation.h"
#include "filters/murmur_hash64a.h"

namespace bloomgate {
namespace {

using internal::AllocationFailed;
using internal::CheckAndReserve;
using internal::OverFilterCap;
using internal::PendingReservation;
using internal::SaturatingAdd;
using internal::SaturatingMul;

// RedisBloom's auto-compaction threshold in CuckooFilter_Delete: compact when
// numDeletes > numItems * 0.10 (and there is more than one sub-filter).
constexpr double kAutoCompactDeleteRatio = 0.10;

// The smallest power of two >= n, for 1 <= n <= 2^63 (RedisBloom's getNextN2).
uint64_t NextPowerOfTwo(uint64_t n) { return n <= 1 ? 1 : uint64_t{1} << (64 - __builtin_clzll(n - 1)); }

uint8_t* FindInBucket(uint8_t* bucket, uint32_t bucket_size, uint8_t fp) {
  for (uint32_t s = 0; s < bucket_size; ++s) {
    if (bucket[s] == fp) return bucket + s;
  }
  return nullptr;
}

uint64_t CountInBucket(const uint8_t* bucket, uint32_t bucket_size, uint8_t fp) {
  uint64_t n = 0;
  for (uint32_t s = 0; s < bucket_size; ++s) n += bucket[s] == fp;
  return n;
}

// A sub-filter of more buckets than any filter may have (kMaxCuckooBuckets).
FilterStatus AbsurdSize(const FilterLimits& limits, MemoryRefusal* refusal) {
  return internal::AbsurdSize(UINT64_MAX, limits, refusal);
}

}  // namespace

FilterStatus CuckooFilter::Create(const CuckooFilterOptions& options, const FilterLimits& limits,
                                  MemoryBudget* budget, std::unique_ptr<CuckooFilter>* out,
                                  MemoryRefusal* refusal) {
  out->reset();
  if (options.bucket_size < 1 || options.bucket_size > kMaxCuckooBucketSize ||
      options.max_iterations < 1 || options.max_iterations > kMaxCuckooIterations ||
      options.expansion > kMaxCuckooExpansion || options.max_expansions < 1 ||
      options.max_expansions > kMaxCuckooMaxExpansions ||
      options.capacity < 2 * uint64_t{options.bucket_size} ||
      (options.scheme == CuckooScheme::kRedisBloom && options.hash_seed.value_or(0) != 0)) {
    return FilterStatus::kInvalidOptions;
  }
  // RedisBloom: numBuckets = getNextN2(capacity / bucketSize), >= 2 here.
  const uint64_t per_bucket = options.capacity / options.bucket_size;
  if (per_bucket > kMaxCuckooBuckets) return AbsurdSize(limits, refusal);
  const uint64_t base_buckets = NextPowerOfTwo(per_bucket);
  if (base_buckets > kMaxCuckooBuckets) return AbsurdSize(limits, refusal);
  // 0 stays 0 (non-scaling), as getNextN2(0) wraps back to 0 in RedisBloom.
  const uint32_t expansion =
      options.expansion == 0 ? 0 : static_cast<uint32_t>(NextPowerOfTwo(options.expansion));

  // Everything the first step allocates, checked against the cap before any
  // reservation: the filter object, a one-entry sub-filter array, the slots.
  const uint64_t object_bytes = sizeof(CuckooFilter);
  const uint64_t first_bytes =
      object_bytes + sizeof(SubFilter) + base_buckets * options.bucket_size;  // < 2^64
  if (OverFilterCap(first_bytes, limits)) {
    return CheckAndReserve(first_bytes, 0, limits, nullptr, refusal);  // describes the refusal
  }
  if (FilterStatus s = CheckAndReserve(object_bytes, 0, limits, budget, refusal);
      s != FilterStatus::kOk) {
    return s;
  }
  PendingReservation reservation(budget, object_bytes);
  std::unique_ptr<CuckooFilter> filter(new (std::nothrow) CuckooFilter(
      options, expansion, base_buckets,
      options.scheme == CuckooScheme::kRedisBloom ? 0 : SeedOrNew(options.hash_seed), limits,
      budget, /*bytes=*/object_bytes));
  if (filter == nullptr) return AllocationFailed(object_bytes, refusal);
  reservation.Keep();  // the filter's destructor releases memory_bytes_ from here on
  // No other thread can see the filter yet; the lock is for form (and TSan).
  std::unique_lock lock(filter->mutex_);
  const FilterStatus status = filter->Grow(refusal);
  lock.unlock();
  if (status != FilterStatus::kOk) return status;  // ~CuckooFilter releases what it holds
  *out = std::move(filter);
  return FilterStatus::kOk;
}

namespace {
// Block words are whole 64-bit words: slots take the bytes rounded up.
uint64_t SlotWordBytes(uint64_t bytes) { return (bytes + 7) / 8 * 8; }
}  // namespace

CuckooFilter::Slots CuckooFilter::NewSlots(uint64_t bytes) {
  if (bytes > PTRDIFF_MAX - 7) return nullptr;
  // Zeroed words are empty slots; read and written as bytes (char access).
  std::atomic<uint64_t>* words = internal::NewZeroedBlockWords(SlotWordBytes(bytes));
  return Slots(reinterpret_cast<uint8_t*>(words), CuckooSlotsDeleter{bytes});
}

void CuckooSlotsDeleter::operator()(uint8_t* slots) const {
  internal::DeleteBlockWords(reinterpret_cast<std::atomic<uint64_t>*>(slots),
                             SlotWordBytes(bytes));
}

uint64_t CuckooFilter::SubFilterBuckets(uint64_t base_buckets, uint32_t expansion,
                                        uint32_t index) {
  // Stop multiplying once saturated: index can be up to 65535, and callers
  // ask for every index of a filter (O(n^2) steps for n sub-filters: a
  // LOADCHUNK header claiming 65535 took over 10 s, dump_chunk_fuzz). With
  // expansion >= 2 the product saturates within 64 steps; expansion 1 (or a
  // zero product) never changes it.
  if (expansion <= 1 || base_buckets == 0) return expansion == 0 && index > 0 ? 0 : base_buckets;
  uint64_t buckets = base_buckets;
  for (uint32_t i = 0; i < index && buckets != UINT64_MAX; ++i) {
    buckets = SaturatingMul(buckets, expansion);
  }
  return buckets;
}

FilterStatus CuckooFilter::Restore(const CuckooFilterShape& shape, const FilterLimits& limits,
                                   MemoryBudget* budget, std::unique_ptr<CuckooFilter>* out) {
  out->reset();
  // The loader has already refused these with precise texts; here they only
  // must never produce a filter (or an allocation) from a bad description.
  const bool expansion_ok = shape.expansion == 0 || (shape.expansion <= kMaxCuckooExpansion &&
                                                     std::has_single_bit(shape.expansion));
  if (shape.bucket_size < 1 || shape.bucket_size > kMaxCuckooBucketSize ||
      shape.max_iterations < 1 || shape.max_iterations > kMaxCuckooIterations || !expansion_ok ||
      shape.max_expansions < 1 || shape.max_expansions > kMaxCuckooMaxExpansions ||
      shape.base_buckets < MinBaseBuckets(shape.scheme) || shape.base_buckets > kMaxCuckooBuckets ||
      !std::has_single_bit(shape.base_buckets) || shape.num_filters < 1 ||
      shape.num_filters > shape.max_expansions ||
      (shape.expansion == 0 && shape.num_filters != 1) ||
      (shape.scheme != CuckooScheme::kNative && shape.scheme != CuckooScheme::kRedisBloom) ||
      (shape.scheme == CuckooScheme::kRedisBloom && shape.hash_seed != 0)) {
    return FilterStatus::kInvalidOptions;
  }
  // What Create + Grow would hold with this many sub-filters and no spare
  // array entries: the object, one SubFilter entry and the slots of each.
  uint64_t total = sizeof(CuckooFilter);
  for (uint32_t k = 0; k < shape.num_filters; ++k) {
    const uint64_t buckets = SubFilterBuckets(shape.base_buckets, shape.expansion, k);
    if (buckets > kMaxCuckooBuckets) return FilterStatus::kInvalidOptions;
    total = SaturatingAdd(total, sizeof(SubFilter) + buckets * shape.bucket_size);  // < 2^64
  }
  if (OverFilterCap(total, limits)) {
    return FilterStatus::kFilterMemoryLimit;
  }
  if (budget != nullptr && !budget->TryReserve(total)) return FilterStatus::kOutOfMemory;
  PendingReservation reservation(budget, total);

  CuckooFilterOptions options;
  options.bucket_size = shape.bucket_size;
  options.max_iterations = shape.max_iterations;
  options.max_expansions = shape.max_expansions;
  options.scheme = shape.scheme;
  // memory_bytes_ = total from the start: the destructor releases exactly
  // what was reserved even if an allocation below fails.
  std::unique_ptr<CuckooFilter> filter(new (std::nothrow) CuckooFilter(
      options, shape.expansion, shape.base_buckets, shape.hash_seed, limits, budget,
      /*bytes=*/total));
  if (filter == nullptr) return FilterStatus::kOutOfMemory;
  reservation.Keep();
  // No other thread can see the filter yet; the lock is for form (and TSan).
  std::unique_lock lock(filter->mutex_);
  filter->filters_.reset(new (std::nothrow) SubFilter[shape.num_filters]);
  if (filter->filters_ == nullptr) return FilterStatus::kOutOfMemory;
  filter->filters_capacity_ = shape.num_filters;
  for (uint32_t k = 0; k < shape.num_filters; ++k) {
    const uint64_t buckets = SubFilterBuckets(shape.base_buckets, shape.expansion, k);
    const uint64_t slot_bytes = buckets * shape.bucket_size;
    if (slot_bytes > PTRDIFF_MAX) return FilterStatus::kOutOfMemory;
    filter->filters_[k].slots = NewSlots(slot_bytes);
    if (filter->filters_[k].slots == nullptr) return FilterStatus::kOutOfMemory;
    filter->filters_[k].num_buckets = buckets;
    filter->num_filters_ = k + 1;
  }
  filter->items_ = shape.items;
  filter->deletes_ = shape.deletes;
  lock.unlock();
  *out = std::move(filter);
  return FilterStatus::kOk;
}

CuckooFilter::CuckooFilter(const CuckooFilterOptions& options, uint32_t expansion,
                           uint64_t base_buckets, uint64_t hash_seed, const FilterLimits& limits,
                           MemoryBudget* budget, uint64_t bytes)
    : base_buckets_(base_buckets),
      bucket_size_(options.bucket_size),
      max_iterations_(options.max_iterations),
      expansion_(expansion),
      max_expansions_(options.max_expansions),
      hash_seed_(hash_seed),
      scheme_(options.scheme),
      limits_(limits),
      budget_(budget),
      memory_bytes_(bytes) {}

KeyHash CuckooFilter::Hash(std::string_view item) const {
  if (scheme_ == CuckooScheme::kRedisBloom) {
    // One 64-bit hash serves as fp source (lo) and i1 (hi), as in
    // RedisBloom's getLookupParams.
    const uint64_t h = MurmurHash64A(item, /*seed=*/0);
    return KeyHash{h, h};
  }
  return HashKey(item, hash_seed_);
}

CuckooFilter::~CuckooFilter() {
  if (budget_ != nullptr) budget_->Release(memory_bytes_);
}

FilterStatus CuckooFilter::Grow(MemoryRefusal* refusal) {
  const uint32_t index = num_filters_;
  // n_k = n_0 x expansion^k, saturating: an absurd size is refused below.
  uint64_t growth = 1;
  for (uint32_t i = 0; i < index; ++i) growth = SaturatingMul(growth, expansion_);
  const uint64_t buckets = SaturatingMul(base_buckets_, growth);
  if (buckets > kMaxCuckooBuckets) return AbsurdSize(limits_, refusal);
  const uint64_t slot_bytes = buckets * bucket_size_;  // <= 2^56 * 255 < 2^64
  const bool new_array = num_filters_ == filters_capacity_;
  const uint64_t cost = slot_bytes + (new_array ? sizeof(SubFilter) : 0);
  if (FilterStatus s = CheckAndReserve(cost, memory_bytes_, limits_, budget_, refusal);
      s != FilterStatus::kOk) {
    return s;
  }
  PendingReservation reservation(budget_, cost);

  if (slot_bytes > PTRDIFF_MAX) return AllocationFailed(cost, refusal);
  Slots slots = NewSlots(slot_bytes);
  if (slots == nullptr) return AllocationFailed(cost, refusal);
  if (new_array) {
    // One more entry, exactly: growth is rare and bounded by max_expansions.
    std::unique_ptr<SubFilter[]> grown(new (std::nothrow) SubFilter[filters_capacity_ + 1]);
    if (grown == nullptr) return FilterStatus::kOutOfMemory;
    std::move(filters_.get(), filters_.get() + num_filters_, grown.get());
    filters_ = std::move(grown);
    ++filters_capacity_;
  }
  filters_[index].slots = std::move(slots);
  filters_[index].num_buckets = buckets;
  ++num_filters_;
  memory_bytes_ += cost;
  reservation.Keep();
  return FilterStatus::kOk;
}

uint8_t* CuckooFilter::FreeSlot(const SubFilter& sub, uint8_t fp, uint64_t index) const {
  if (uint8_t* slot = FindInBucket(Bucket(sub, index), bucket_size_, 0)) return slot;
  return FindInBucket(Bucket(sub, Alt(index, fp)), bucket_size_, 0);
}

bool CuckooFilter::Contains(uint8_t fp, uint64_t i1) const {
  for (uint32_t k = num_filters_; k-- > 0;) {
    const SubFilter& sub = filters_[k];
    if (FindInBucket(Bucket(sub, i1), bucket_size_, fp) != nullptr ||
        FindInBucket(Bucket(sub, Alt(i1, fp)), bucket_size_, fp) != nullptr) {
      return true;
    }
  }
  return false;
}

uint32_t CuckooFilter::VictimSlot(uint64_t seed, uint32_t kick) const {
  // RedisBloom's Filter_KOInsert starts at slot 0 and steps one slot per
  // kick (victimIx = (victimIx + 1) % bucketSize); its undo steps back.
  if (scheme_ == CuckooScheme::kRedisBloom) return kick % bucket_size_;
  // splitmix64's finaliser over (seed, kick), then fastrange to the bucket.
  // (A plain multiply is not enough: seed + kick * odd constant changes the
  // top bit almost every step, which is round-robin again.)
  uint64_t x = seed + (uint64_t{kick} + 1) * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<uint32_t>(((x >> 32) * bucket_size_) >> 32);
}

bool CuckooFilter::KickInsert(SubFilter& sub, uint8_t fp, uint64_t i1, uint32_t max_kicks,
                              uint32_t* kicks_made) {
  const uint64_t mask = sub.num_buckets - 1;
  uint64_t bucket = i1 & mask;
  uint8_t carried = fp;
  *kicks_made = max_kicks;
  for (uint32_t kick = 0; kick < max_kicks; ++kick) {
    // Put the carried fingerprint in the victim slot and carry the evicted
    // one to ITS other bucket.
    std::swap(sub.slots[bucket * bucket_size_ + VictimSlot(i1, kick)], carried);
    bucket = Alt(bucket, carried) & mask;
    if (uint8_t* slot = FindInBucket(sub.slots.get() + bucket * bucket_size_, bucket_size_, 0)) {
      *slot = carried;
      *kicks_made = kick + 1;
      return true;
    }
  }
  // No room: undo the kicks, last first. Each step is the exact inverse of
  // one above (alt is an involution, and the victim slot of each kick is
  // recomputed), so the sub-filter ends byte for byte as it began and
  // `carried` is fp again.
  for (uint32_t kick = max_kicks; kick-- > 0;) {
    bucket = Alt(bucket, carried) & mask;
    std::swap(sub.slots[bucket * bucket_size_ + VictimSlot(i1, kick)], carried);
  }
  return false;
}

bool CuckooFilter::CopiesFill(const SubFilter& sub, uint8_t fp, uint64_t i1) const {
  const uint8_t* b1 = Bucket(sub, i1);
  const uint8_t* b2 = Bucket(sub, Alt(i1, fp));
  const auto all_fp = [&](const uint8_t* bucket) {
    return std::all_of(bucket, bucket + bucket_size_, [fp](uint8_t slot) { return slot == fp; });
  };
  return all_fp(b1) && all_fp(b2);
}

FilterStatus CuckooFilter::Insert(uint8_t fp, uint64_t i1, uint64_t* kicks_left,
                                  Admission admission, MemoryRefusal* refusal) {
  for (uint32_t k = num_filters_; k-- > 0;) {
    if (uint8_t* slot = FreeSlot(filters_[k], fp, i1)) {
      *slot = fp;
      ++items_;
      return FilterStatus::kOk;
    }
  }
  // No kick can help (a kicked copy lands in the other bucket, full of
  // copies too), and the sub-filter before did not either: refuse before
  // kicking (see the header's "Deliberate difference 0"). A client rule: a
  // replay applies what an older build acknowledged (see Add).
  if (admission == Admission::kClient && scheme_ == CuckooScheme::kNative && scaling() &&
      num_filters_ >= 2 &&
      CopiesFill(filters_[num_filters_ - 1], fp, i1) &&
      CopiesFill(filters_[num_filters_ - 2], fp, i1)) {
    return FilterStatus::kCopiesFull;
  }
  uint32_t max_kicks = max_iterations_;
  if (kicks_left != nullptr && *kicks_left < max_kicks) {
    max_kicks = static_cast<uint32_t>(*kicks_left);
  }
  uint32_t kicks_made = 0;
  const bool placed = KickInsert(filters_[num_filters_ - 1], fp, i1, max_kicks, &kicks_made);
  kicks_ += kicks_made;
  if (kicks_left != nullptr) *kicks_left -= kicks_made;
  if (placed) {
    ++items_;
    return FilterStatus::kOk;
  }
  if (!scaling()) return FilterStatus::kFull;
  if (num_filters_ >= max_expansions_) return FilterStatus::kMaxExpansions;
  const FilterStatus status = Grow(refusal);
  if (status != FilterStatus::kOk) return status;
  // The new sub-filter is empty: bucket i1 has a free slot.
  *FreeSlot(filters_[num_filters_ - 1], fp, i1) = fp;
  ++items_;
  return FilterStatus::kOk;
}

FilterStatus CuckooFilter::Add(const KeyHash& h, uint64_t* kicks_left, Admission admission,
                               MemoryRefusal* refusal) {
  std::unique_lock lock(mutex_);
  return Insert(FingerprintOf(h), h.hi, kicks_left, admission, refusal);
}

FilterStatus CuckooFilter::AddIfAbsent(const KeyHash& h, bool* added, uint64_t* kicks_left,
                                       Admission admission, MemoryRefusal* refusal) {
  *added = false;
  const uint8_t fp = FingerprintOf(h);
  std::unique_lock lock(mutex_);
  if (Contains(fp, h.hi)) return FilterStatus::kOk;
  const FilterStatus status = Insert(fp, h.hi, kicks_left, admission, refusal);
  *added = status == FilterStatus::kOk;
  return status;
}

bool CuckooFilter::MayContain(const KeyHash& h) const {
  const uint8_t fp = FingerprintOf(h);
  std::shared_lock lock(mutex_);
  return Contains(fp, h.hi);
}

void CuckooFilter::MayContainBatch(std::span<const KeyHash> hashes, bool* out) const {
  // 64 items x 2 buckets: 128 lines in flight at most per sub-filter (as
  // ScalableBloomFilter's passes).
  constexpr size_t kPass = 64;
  std::shared_lock lock(mutex_);
  for (size_t start = 0; start < hashes.size(); start += kPass) {
    const size_t end = std::min(hashes.size(), start + kPass);
    for (size_t i = start; i < end; ++i) {
      const uint8_t fp = FingerprintOf(hashes[i]);
      const uint64_t i1 = hashes[i].hi;
      for (uint32_t k = num_filters_; k-- > 0;) {
        __builtin_prefetch(Bucket(filters_[k], i1), /*rw=*/0, /*locality=*/3);
        __builtin_prefetch(Bucket(filters_[k], Alt(i1, fp)), /*rw=*/0, /*locality=*/3);
      }
    }
    for (size_t i = start; i < end; ++i) out[i] = Contains(FingerprintOf(hashes[i]), hashes[i].hi);
  }
}

uint64_t CuckooFilter::Count(const KeyHash& h) const {
  const uint8_t fp = FingerprintOf(h);
  std::shared_lock lock(mutex_);
  uint64_t total = 0;
  for (uint32_t k = 0; k < num_filters_; ++k) {
    const SubFilter& sub = filters_[k];
    const uint8_t* b1 = Bucket(sub, h.hi);
    const uint8_t* b2 = Bucket(sub, Alt(h.hi, fp));
    total += CountInBucket(b1, bucket_size_, fp);
    // RedisBloom's subFilterCount adds both buckets even when they are one
    // (fp x 0x5bd1e995 = 0 mod n, possible below 256 buckets).
    if (b2 != b1 || scheme_ == CuckooScheme::kRedisBloom) total += CountInBucket(b2, bucket_size_, fp);
  }
  return total;
}

bool CuckooFilter::Remove(const KeyHash& h) {
  const uint8_t fp = FingerprintOf(h);
  std::unique_lock lock(mutex_);
  for (uint32_t k = num_filters_; k-- > 0;) {
    const SubFilter& sub = filters_[k];
    uint8_t* slot = FindInBucket(Bucket(sub, h.hi), bucket_size_, fp);
    if (slot == nullptr) slot = FindInBucket(Bucket(sub, Alt(h.hi, fp)), bucket_size_, fp);
    if (slot == nullptr) continue;
    *slot = 0;
    --items_;
    ++deletes_;
    if (num_filters_ > 1 &&
        static_cast<double>(deletes_) > static_cast<double>(items_) * kAutoCompactDeleteRatio) {
      CompactFrom(/*keep_going=*/false);
    }
    return true;
  }
  return false;
}

void CuckooFilter::Compact() {
  std::unique_lock lock(mutex_);
  CompactFrom(/*keep_going=*/true);
}

void CuckooFilter::CompactFrom(bool keep_going) {
  for (uint32_t k = num_filters_; k-- > 1;) {
    SubFilter& sub = filters_[k];
    bool emptied = true;
    for (uint64_t b = 0; b < sub.num_buckets; ++b) {
      uint8_t* bucket = sub.slots.get() + b * bucket_size_;
      for (uint32_t s = 0; s < bucket_size_; ++s) {
        const uint8_t fp = bucket[s];
        if (fp == 0) continue;
        // b is i1 or i2 of this fingerprint's item, masked to n_k; masked
        // further to an older sub-filter's n_j <= n_k it is that item's bucket
        // there, and AltIndex gives the other one.
        uint8_t* home = nullptr;
        for (uint32_t j = 0; j < k && home == nullptr; ++j) home = FreeSlot(filters_[j], fp, b);
        if (home == nullptr) {
          emptied = false;
          continue;
        }
        *home = fp;
        bucket[s] = 0;
      }
    }
    if (emptied && k == num_filters_ - 1) {
      // Free the newest sub-filter; the array entry stays for reuse.
      const uint64_t bytes = sub.num_buckets * bucket_size_;
      sub.slots.reset();
      sub.num_buckets = 0;
      --num_filters_;
      memory_bytes_ -= bytes;
      if (budget_ != nullptr) budget_->Release(bytes);
    } else if (!emptied && !keep_going) {
      break;  // the sub-filters below cannot be freed either
    }
  }
  deletes_ = 0;
}

CuckooFilterInfo CuckooFilter::Info() const {
  std::shared_lock lock(mutex_);
  uint64_t size = memory_bytes_;
  if (scheme_ == CuckooScheme::kRedisBloom) {
    // RedisBloom's CF.INFO Size: sizeof(CuckooFilter) 40 + sizeof(SubCF) 16
    // per sub-filter + the slots (checked against its dumps: 1 sub-filter
    // of 1024 slot bytes -> 1080; 3 of 1792 in all -> 1880).
    size = 40 + 16 * uint64_t{num_filters_};
    for (uint32_t k = 0; k < num_filters_; ++k) size += filters_[k].num_buckets * bucket_size_;
  }
  return CuckooFilterInfo{
      /*size=*/size,
      /*num_buckets=*/base_buckets_,
      /*num_filters=*/num_filters_,
      /*items=*/items_,
      /*deletes=*/deletes_,
      /*bucket_size=*/bucket_size_,
      /*expansion=*/expansion_,
      /*max_iterations=*/max_iterations_,
  };
}

uint64_t CuckooFilter::memory_bytes() const {
  std::shared_lock lock(mutex_);
  return memory_bytes_;
}

uint64_t CuckooFilter::num_buckets() const { return base_buckets_; }

uint64_t CuckooFilter::kicks() const {
  std::shared_lock lock(mutex_);
  return kicks_;
}

uint64_t CuckooFilter::total_buckets() const {
  std::shared_lock lock(mutex_);
  uint64_t total = 0;
  for (uint32_t k = 0; k < num_filters_; ++k) total += filters_[k].num_buckets;
  return total;
}

uint32_t CuckooFilter::num_filters() const {
  std::shared_lock lock(mutex_);
  return num_filters_;
}

uint64_t CuckooFilter::items() const {
  std::shared_lock lock(mutex_);
  return items_;
}

uint64_t CuckooFilter::deletes() const {
  std::shared_lock lock(mutex_);
  return deletes_;
}

std::vector<CuckooSubFilterInfo> CuckooFilter::SubFilters() const {
  std::shared_lock lock(mutex_);
  std::vector<CuckooSubFilterInfo> infos;
  infos.reserve(num_filters_);
  for (uint32_t k = 0; k < num_filters_; ++k) {
    const SubFilter& sub = filters_[k];
    const uint64_t bytes = sub.num_buckets * bucket_size_;
    uint64_t occupied = 0;
    for (uint64_t i = 0; i < bytes; ++i) occupied += sub.slots[i] != 0;
    infos.push_back(CuckooSubFilterInfo{sub.num_buckets, bytes, occupied});
  }
  return infos;
}

CuckooFilterShape CuckooFilter::Shape() const {
  std::shared_lock lock(mutex_);
  CuckooFilterShape shape;
  shape.base_buckets = base_buckets_;
  shape.bucket_size = bucket_size_;
  shape.max_iterations = max_iterations_;
  shape.expansion = expansion_;
  shape.max_expansions = max_expansions_;
  shape.num_filters = num_filters_;
  shape.items = items_;
  shape.deletes = deletes_;
  shape.hash_seed = hash_seed_;
  shape.scheme = scheme_;
  return shape;
}

uint8_t* CuckooFilter::mutable_slots(uint32_t filter) { return filters_[filter].slots.get(); }

uint64_t CuckooFilter::CopySlots(uint32_t filter, uint64_t offset, uint8_t* out,
                                 uint64_t len) const {
  std::shared_lock lock(mutex_);
  if (filter >= num_filters_) return 0;
  const SubFilter& sub = filters_[filter];
  const uint64_t bytes = sub.num_buckets * bucket_size_;
  if (offset >= bytes) return 0;
  const uint64_t n = std::min(len, bytes - offset);
  std::memcpy(out, sub.slots.get() + offset, static_cast<size_t>(n));
  return n;
}

}  // namespace bloomgate
