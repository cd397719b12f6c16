// The replication backlog: the last `capacity` bytes of the stream, by
// offset, so a replica whose link dropped continues from where it was
// (PSYNC -> +CONTINUE) instead of a full sync. Offsets count stream bytes
// (INFO's master_repl_offset): a record ending at offset X is held as the
// bytes [X - size, X).
//
// A record larger than the whole backlog cannot be held: the ring empties
// and starts after it, so every replica behind that record needs a full
// sync (Append says so, and the caller logs it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomgate {

class BacklogRing {
 public:
  explicit BacklogRing(uint64_t capacity) : capacity_(capacity) {}

  // Empties the ring; the next byte appended will be at `offset`.
  void Reset(uint64_t offset);
  // Appends `bytes`, which end at stream offset `end_offset` (the previous
  // end plus their size; anything else resets the ring to `end_offset`).
  // False when they did not fit (larger than the ring): it is empty after.
  bool Append(std::string_view bytes, uint64_t end_offset);
  // Changes the capacity, keeping the newest bytes that fit.
  void Resize(uint64_t capacity);

  // Whether the ring holds every byte from `offset` to its end (an offset
  // equal to the end holds nothing yet, and is continued).
  bool Holds(uint64_t offset) const { return offset >= start() && offset <= end_; }
  // Appends the bytes from `offset` to the end to *out; false if not held.
  bool CopyFrom(uint64_t offset, std::string* out) const;

  uint64_t capacity() const { return capacity_; }
  uint64_t histlen() const { return size_; }
  uint64_t start() const { return end_ - size_; }  // offset of the oldest byte held
  uint64_t end() const { return end_; }

 private:
  uint64_t capacity_;
  std::string ring_;   // allocated to capacity_ on the first append
  uint64_t head_ = 0;  // index in ring_ where the next byte goes
  uint64_t size_ = 0;  // bytes held (<= capacity_)
  uint64_t end_ = 0;   // stream offset just past the newest byte
};

}  // namespace bloomgate
