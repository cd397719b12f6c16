#include "server/replication/backlog_ring.h"

#include <algorithm>

namespace bloomgate {

void BacklogRing::Reset(uint64_t offset) {
  head_ = 0;
  size_ = 0;
  end_ = offset;
}

bool BacklogRing::Append(std::string_view bytes, uint64_t end_offset) {
  if (end_offset != end_ + bytes.size()) Reset(end_offset - bytes.size());
  if (bytes.size() > capacity_) {
    Reset(end_offset);
    return false;
  }
  if (ring_.size() != capacity_) {
    // First append since construction or Resize, which left it empty.
    ring_.assign(capacity_, '\0');
    head_ = 0;
    size_ = 0;
  }
  size_t copied = 0;
  while (copied < bytes.size()) {
    const size_t piece = std::min<size_t>(bytes.size() - copied, capacity_ - head_);
    ring_.replace(head_, piece, bytes.data() + copied, piece);
    head_ = (head_ + piece) % capacity_;
    copied += piece;
  }
  size_ = std::min<uint64_t>(capacity_, size_ + bytes.size());
  end_ = end_offset;
  return true;
}

void BacklogRing::Resize(uint64_t capacity) {
  std::string held;
  CopyFrom(start(), &held);
  const uint64_t keep = std::min<uint64_t>(held.size(), capacity);
  const uint64_t end = end_;
  capacity_ = capacity;
  ring_.clear();
  Reset(end - keep);
  if (keep > 0) Append(std::string_view(held).substr(held.size() - keep), end);
}

bool BacklogRing::CopyFrom(uint64_t offset, std::string* out) const {
  if (!Holds(offset)) return false;
  uint64_t count = end_ - offset;
  if (count == 0) return true;
  // The oldest byte is at head_ - size_ (mod capacity); offset is `skip` after it.
  const uint64_t skip = offset - start();
  uint64_t index = (head_ + ring_.size() - size_ + skip) % ring_.size();
  out->reserve(out->size() + count);
  while (count > 0) {
    const uint64_t piece = std::min<uint64_t>(count, ring_.size() - index);
    out->append(ring_, index, piece);
    index = (index + piece) % ring_.size();
    count -= piece;
  }
  return true;
}

}  // namespace bloomgate
