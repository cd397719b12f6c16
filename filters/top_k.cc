#include "filters/top_k.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <utility>

#include "filters/memory_reservation.h"

namespace bloomgate {
namespace {

using internal::PendingReservation;

inline uint64_t FastRange64(uint64_t hash, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(hash) * n) >> 64);
}

}  // namespace

uint64_t TopK::FixedBytesFor(uint32_t k, uint32_t width, uint32_t depth) {
  // width x depth <= kMaxBuckets (Create), so < 2^63 + 2^32 * 40: no overflow.
  return sizeof(TopK) + uint64_t{width} * depth * sizeof(TopKBucket) + uint64_t{k} * kSlotBytes;
}

FilterStatus TopK::Create(const TopKOptions& options, const FilterLimits& limits,
                          MemoryBudget* budget, std::unique_ptr<TopK>* out,
                          MemoryRefusal* refusal) {
  out->reset();
  if (options.k < 1 || options.width < 1 || options.depth < 1 || !(options.decay > 0) ||
      !(options.decay <= 1)) {
    return FilterStatus::kInvalidOptions;
  }
  if (uint64_t{options.width} * options.depth > kMaxBuckets) {
    return internal::AbsurdSize(UINT64_MAX, limits, refusal);
  }
  const uint64_t bytes = FixedBytesFor(options.k, options.width, options.depth);
  if (bytes > SIZE_MAX / 2) return internal::AbsurdSize(bytes, limits, refusal);
  if (FilterStatus s = internal::CheckAndReserve(bytes, 0, limits, budget, refusal);
      s != FilterStatus::kOk) {
    return s;
  }
  PendingReservation reservation(budget, bytes);
  std::unique_ptr<TopK> topk(new (std::nothrow) TopK(options, bytes, budget));
  if (topk == nullptr) return internal::AllocationFailed(bytes, refusal);
  reservation.Keep();  // ~TopK releases fixed_bytes_ from here on
  try {
    topk->buckets_.resize(static_cast<size_t>(uint64_t{options.width} * options.depth));
    topk->heap_.resize(options.k);
  } catch (const std::bad_alloc&) {
    return internal::AllocationFailed(bytes, refusal);  // ~TopK gives the reservation back
  }
  *out = std::move(topk);
  return FilterStatus::kOk;
}

TopK::TopK(const TopKOptions& options, uint64_t fixed_bytes, MemoryBudget* budget)
    : k_(options.k), width_(options.width), depth_(options.depth), decay_(options.decay),
      scheme_(options.scheme), prng_state_(options.prng_state), random_(options.random),
      fixed_bytes_(fixed_bytes), budget_(budget) {
  if (scheme_ == SketchScheme::kRedisBloom) {
    // topk.c's table, pow(decay, i), so the same coin lands the same way.
    for (int i = 0; i < 256; ++i) decay_table_[i] = std::pow(decay_, i);
    return;
  }
  // decay^i by repeated multiplication: each step is one correctly rounded
  // IEEE-754 product, so every machine builds the same table.
  decay_table_[0] = 1.0;
  for (int i = 1; i < 256; ++i) decay_table_[i] = decay_table_[i - 1] * decay_;
}

TopK::~TopK() {
  if (budget_ != nullptr) budget_->Release(fixed_bytes_ + item_charged_);
}

uint64_t TopK::NextRandom() {
  // SplitMix64 (Vigna, public domain reference): a Weyl sequence through a
  // 64-bit finaliser; period 2^64, every state valid.
  uint64_t z = (prng_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double TopK::DecayPower(uint32_t count) const {
  if (count < 256) return decay_table_[count];
  // decay^count = (decay^256)^(count / 256) x decay^(count % 256), the first
  // factor by squaring; the operation order is fixed, so it is reproducible.
  double base = decay_table_[255] * decay_;  // decay^256
  double result = decay_table_[count % 256];
  for (uint32_t e = count / 256; e != 0 && result != 0; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return result;
}

size_t TopK::BucketIndex(const KeyHash& h, uint32_t row) const {
  return static_cast<size_t>(uint64_t{row} * width_ + FastRange64(h.lo + row * h.hi, width_));
}

int64_t TopK::FindInHeap(uint32_t fp, std::string_view item) const {
  for (size_t i = 0; i < heap_.size(); ++i) {
    const TopKEntry& e = heap_[i];
    if (e.count != 0 && e.fp == fp && e.item == item) return static_cast<int64_t>(i);
  }
  return -1;
}

void TopK::SiftDown(size_t slot) {
  const size_t n = heap_.size();
  for (;;) {
    size_t smallest = slot;
    const size_t left = 2 * slot + 1;
    const size_t right = left + 1;
    if (left < n && heap_[left].count < heap_[smallest].count) smallest = left;
    if (right < n && heap_[right].count < heap_[smallest].count) smallest = right;
    if (smallest == slot) return;
    std::swap(heap_[slot], heap_[smallest]);
    slot = smallest;
  }
}

void TopK::SiftUp(size_t slot) {
  while (slot > 0) {
    const size_t parent = (slot - 1) / 2;
    if (heap_[parent].count <= heap_[slot].count) return;
    std::swap(heap_[parent], heap_[slot]);
    slot = parent;
  }
}

void TopK::ChargeItem(uint64_t bytes) {
  item_bytes_ += bytes;
  if (budget_ == nullptr || budget_->TryReserve(bytes)) item_charged_ += bytes;
}

void TopK::UnchargeItem(uint64_t bytes) {
  item_bytes_ -= bytes;
  const uint64_t release = std::min(bytes, item_charged_);
  item_charged_ -= release;
  if (budget_ != nullptr) budget_->Release(release);
}

bool TopK::Add(const KeyHash& h, std::string_view item, uint32_t increment,
               std::string* expelled) {
  if (scheme_ == SketchScheme::kRedisBloom) return AddRedisBloom(item, increment, expelled);
  const uint32_t fp = Fingerprint(h);
  const uint32_t heap_min = heap_[0].count;
  int64_t in_heap = -1;
  bool searched = false;
  uint32_t estimate = 0;
  for (uint32_t row = 0; row < depth_; ++row) {
    TopKBucket& b = buckets_[BucketIndex(h, row)];
    if (b.count == 0) {
      b.fp = fp;
      b.count = increment;
      estimate = std::max(estimate, b.count);
    } else if (b.fp == fp) {
      if (!searched && b.count >= heap_min) {
        in_heap = FindInHeap(fp, item);
        searched = true;
      }
      // A bucket above the heap minimum whose item is not in the heap
      // belongs to another item with the same fingerprint (topk.c's rule).
      if (in_heap >= 0 || b.count <= heap_min) {
        b.count = increment > kMaxCount - b.count ? kMaxCount : b.count + increment;
        estimate = std::max(estimate, b.count);
      }
    } else {
      for (uint32_t left = increment; left > 0; --left) {
        // A uniform double in [0, 1) from the top 53 bits.
        const double chance = static_cast<double>(NextRandom() >> 11) * 0x1.0p-53;
        if (chance < DecayPower(b.count)) {
          if (--b.count == 0) {
            b.fp = fp;
            b.count = left;
            estimate = std::max(estimate, b.count);
            break;
          }
        }
      }
    }
  }
  // topk.c searches the heap only through a bucket at or above the minimum;
  // an item whose buckets all decayed below it must still not be inserted
  // twice.
  if (!searched && estimate > heap_min) in_heap = FindInHeap(fp, item);
  if (in_heap >= 0) {
    // Not the larger of the two: the estimate may have decayed (topk.c).
    TopKEntry& e = heap_[static_cast<size_t>(in_heap)];
    const uint32_t before = e.count;
    e.count = estimate;
    if (e.count == 0) {
      // Only an INCRBY of 0 on an item whose buckets all decayed gets here;
      // an empty slot holds no item.
      UnchargeItem(e.item.size());
      e.item.clear();
      e.fp = 0;
    }
    if (e.count < before) {
      SiftUp(static_cast<size_t>(in_heap));
    } else {
      SiftDown(static_cast<size_t>(in_heap));
    }
    return false;
  }
  if (estimate <= heap_min) return false;
  TopKEntry& top = heap_[0];
  const bool had_item = top.count != 0;
  if (had_item) {
    UnchargeItem(top.item.size());
    *expelled = std::move(top.item);
  }
  top.count = estimate;
  top.fp = fp;
  top.item.assign(item.data(), item.size());
  ChargeItem(item.size());
  SiftDown(0);
  return had_item;
}

bool TopK::Query(const KeyHash& h, std::string_view item) const {
  if (scheme_ == SketchScheme::kRedisBloom) return QueryRedisBloom(item);
  return FindInHeap(Fingerprint(h), item) >= 0;
}

uint32_t TopK::Count(const KeyHash& h, std::string_view item) const {
  if (scheme_ == SketchScheme::kRedisBloom) return CountRedisBloom(item);
  const uint32_t fp = Fingerprint(h);
  return Estimate(fp, FindInHeap(fp, item) >= 0, [&](uint32_t row) { return BucketIndex(h, row); });
}

std::vector<TopKEntry> TopK::List() const {
  if (scheme_ == SketchScheme::kRedisBloom) return ListRedisBloom();
  std::vector<TopKEntry> out;
  for (const TopKEntry& e : heap_) {
    if (e.count != 0) out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const TopKEntry& a, const TopKEntry& b) {
    return a.count != b.count ? a.count > b.count : a.item < b.item;
  });
  return out;
}

bool TopK::Load(std::vector<TopKBucket> buckets, std::vector<TopKEntry> heap) {
  if (buckets.size() != buckets_.size() || heap.size() != heap_.size()) return false;
  for (size_t i = 0; i < heap.size(); ++i) {
    if (scheme_ == SketchScheme::kRedisBloom) {
      const TopKEntry& e = heap[i];
      if (!e.filled && (e.count != 0 || e.fp != 0 || !e.item.empty())) return false;
      continue;
    }
    if (heap[i].count == 0 && (!heap[i].item.empty() || heap[i].fp != 0)) return false;
    if (i > 0 && heap[(i - 1) / 2].count > heap[i].count) return false;
  }
  uint64_t bytes = 0;
  for (const TopKEntry& e : heap) bytes += e.item.size();
  UnchargeItem(item_bytes_);
  buckets_ = std::move(buckets);
  heap_ = std::move(heap);
  ChargeItem(bytes);
  return true;
}

}  // namespace bloomgate
