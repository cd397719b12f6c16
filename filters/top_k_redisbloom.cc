// TopK's SketchScheme::kRedisBloom: HeavyKeeper exactly as RedisBloom 2.4's
// topk.c and rm_topk.c run it, so every TOPK.* reply equals RedisBloom's for
// the same commands on a fresh server.
//
//   fingerprint:     MurmurHash2(item, seed 1919)  (topk.c's GA)
//   row r's bucket:  r * width + MurmurHash2(item, seed r) % width
//
// Add(item, n), per row:
//  - an empty bucket (count 0) takes the item: fp, count = n;
//  - a bucket with the item's fp grows by n (saturating at 2^32 - 1, where
//    topk.c's counter would wrap after 4 billion adds);
//  - another item's bucket decays: up to n coin flips, each with chance
//    rand() / RAND_MAX < decay^count (pow(decay, i) below 256; for larger
//    counts pow(decay^255, count / 255) x decay^(count % 255)); when it
//    reaches 0 the item takes it with the flips left as its count, and the
//    flipping stops.
// The estimate is the largest count the item got. Unless it is below the
// heap minimum (slot 0's count, 0 while a slot is empty): an item in the
// heap takes it as its count, else the item replaces slot 0 and slot 0's
// item, if any, is the expelled one. Either way topk.c's heapifyDown runs
// from that slot -- only down, so a decayed count stays where it was, and a
// tie moves below its equal child.
//
// LIST: the heap slots sorted by count, largest first, by a stable sort
// (glibc's qsort is a merge sort for slots this small), so equal counts
// keep their heap order; it stops at the first count 0.
#include <algorithm>
#include <cmath>

#include "filters/murmur_hash2.h"
#include "filters/top_k.h"

namespace bloomgate {
namespace {

constexpr uint32_t kFingerprintSeed = 1919;  // topk.c's GA

uint32_t RedisBloomFingerprint(std::string_view item) {
  return MurmurHash2(item, kFingerprintSeed);
}

}  // namespace

size_t TopK::RedisBloomBucket(std::string_view item, uint32_t row) const {
  return static_cast<size_t>(uint64_t{row} * width_ + MurmurHash2(item, row) % width_);
}

double TopK::RedisBloomDecay(uint32_t count) const {
  if (count < 256) return decay_table_[count];
  return std::pow(decay_table_[255], count / 255) * decay_table_[count % 255];
}

int64_t TopK::FindFilled(uint32_t fp, std::string_view item) const {
  for (size_t i = 0; i < heap_.size(); ++i) {
    const TopKEntry& e = heap_[i];
    if (e.filled && e.fp == fp && e.item == item) return static_cast<int64_t>(i);
  }
  return -1;
}

void TopK::HeapifyDownRedisBloom(size_t start) {
  const size_t len = heap_.size();
  if (len < 2 || (len - 2) / 2 < start) return;
  size_t child = 2 * start + 1;
  if (child + 1 < len && heap_[child].count > heap_[child + 1].count) ++child;
  if (heap_[child].count > heap_[start].count) return;
  // Moves while the smaller child is at most the moving slot's count.
  TopKEntry moving = std::move(heap_[start]);
  do {
    heap_[start] = std::move(heap_[child]);
    start = child;
    if ((len - 2) / 2 < child) break;
    child = 2 * child + 1;
    if (child + 1 < len && heap_[child].count > heap_[child + 1].count) ++child;
  } while (heap_[child].count < moving.count);
  heap_[start] = std::move(moving);
}

bool TopK::AddRedisBloom(std::string_view item, uint32_t increment, std::string* expelled) {
  const uint32_t fp = RedisBloomFingerprint(item);
  const uint32_t heap_min = heap_[0].count;
  uint32_t estimate = 0;
  for (uint32_t row = 0; row < depth_; ++row) {
    TopKBucket& b = buckets_[RedisBloomBucket(item, row)];
    if (b.count == 0) {
      b.fp = fp;
      b.count = increment;
      estimate = std::max(estimate, b.count);
    } else if (b.fp == fp) {
      b.count = increment > kMaxCount - b.count ? kMaxCount : b.count + increment;
      estimate = std::max(estimate, b.count);
    } else {
      for (uint32_t left = increment; left > 0; --left) {
        const double chance =
            static_cast<double>(random_.Next()) / static_cast<double>(GlibcRandom::kRandMax);
        if (chance < RedisBloomDecay(b.count) && --b.count == 0) {
          b.fp = fp;
          b.count = left;
          estimate = std::max(estimate, b.count);
          break;
        }
      }
    }
  }
  if (estimate < heap_min) return false;
  const int64_t in_heap = FindFilled(fp, item);
  if (in_heap >= 0) {
    // Not the larger of the two: the estimate may have decayed (topk.c).
    heap_[static_cast<size_t>(in_heap)].count = estimate;
    HeapifyDownRedisBloom(static_cast<size_t>(in_heap));
    return false;
  }
  TopKEntry& top = heap_[0];
  const bool had_item = top.filled;
  if (had_item) {
    UnchargeItem(top.item.size());
    *expelled = std::move(top.item);
  }
  top.count = estimate;
  top.fp = fp;
  top.item.assign(item.data(), item.size());
  top.filled = true;
  ChargeItem(item.size());
  HeapifyDownRedisBloom(0);
  return had_item;
}

bool TopK::QueryRedisBloom(std::string_view item) const {
  return FindFilled(RedisBloomFingerprint(item), item) >= 0;
}

uint32_t TopK::CountRedisBloom(std::string_view item) const {
  const uint32_t fp = RedisBloomFingerprint(item);
  return Estimate(fp, FindFilled(fp, item) >= 0,
                  [&](uint32_t row) { return RedisBloomBucket(item, row); });
}

std::vector<TopKEntry> TopK::ListRedisBloom() const {
  std::vector<TopKEntry> sorted(heap_.begin(), heap_.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const TopKEntry& a, const TopKEntry& b) { return a.count > b.count; });
  const auto first_zero = std::find_if(sorted.begin(), sorted.end(),
                                       [](const TopKEntry& e) { return e.count == 0; });
  sorted.erase(first_zero, sorted.end());
  return sorted;
}

}  // namespace bloomgate
