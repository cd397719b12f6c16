// Payload arrays <-> bytes, shared by every codec (see payload_segments.h).
#include "persistence/codec/payload_segments.h"

#include <bit>

#include "persistence/byte_io.h"
#include "persistence/codec/header_fields.h"

namespace bloomgate::codec {
namespace {

uint64_t ToLittleEndian(uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) return __builtin_bswap64(v);
  return v;
}

}  // namespace

// Copies bytes [byte_offset, byte_offset + n) of a word array, as its
// little-endian serialisation, to `out`. One relaxed load per word (a plain
// 8-byte move on x86-64 and ARM64), so this runs at a good fraction of memcpy
// speed without reading the atomics behind the compiler's back; the loads
// are relaxed for the reason given in blocked_bloom.h (no data is published
// through the bits).
void LoadWordBytes(const std::atomic<uint64_t>* words, uint64_t byte_offset, uint8_t* out,
                   uint64_t n) {
  uint64_t index = byte_offset / 8;
  const uint64_t skip = byte_offset % 8;
  if (skip != 0 && n > 0) {
    const uint64_t word = ToLittleEndian(words[index++].load(std::memory_order_relaxed));
    const uint64_t take = std::min<uint64_t>(8 - skip, n);
    std::memcpy(out, reinterpret_cast<const uint8_t*>(&word) + skip, take);
    out += take;
    n -= take;
  }
  for (; n >= 8; n -= 8, out += 8) {
    const uint64_t word = ToLittleEndian(words[index++].load(std::memory_order_relaxed));
    std::memcpy(out, &word, 8);
  }
  if (n > 0) {
    const uint64_t word = ToLittleEndian(words[index].load(std::memory_order_relaxed));
    std::memcpy(out, &word, n);
  }
}

// The inverse, for a loader: whole words are stored, a partial word at either
// end is merged with what is there. Relaxed: the filter is not published yet
// (handing it over later is what orders these stores for its readers), and
// one loader is written by one thread at a time.
void StoreWordBytes(std::atomic<uint64_t>* words, uint64_t byte_offset, const uint8_t* in,
                    uint64_t n) {
  uint64_t index = byte_offset / 8;
  const uint64_t skip = byte_offset % 8;
  auto merge = [&](uint64_t at, uint64_t from, uint64_t count) {
    uint64_t word = ToLittleEndian(words[at].load(std::memory_order_relaxed));
    std::memcpy(reinterpret_cast<uint8_t*>(&word) + from, in, count);
    words[at].store(ToLittleEndian(word), std::memory_order_relaxed);
    in += count;
    n -= count;
  };
  if (skip != 0 && n > 0) merge(index++, skip, std::min<uint64_t>(8 - skip, n));
  for (; n >= 8; n -= 8, in += 8) {
    uint64_t word;
    std::memcpy(&word, in, 8);
    words[index++].store(ToLittleEndian(word), std::memory_order_relaxed);
  }
  if (n > 0) merge(index, 0, n);
}

uint32_t CountAt(const FilterHeader& header, size_t at) {
  ByteReader r(std::string_view(header.bytes).substr(std::min(at, header.bytes.size())));
  uint32_t count = 0;
  return r.GetU32(&count) ? count : 0;
}

Status SegmentedLoader::Write(uint64_t offset, const uint8_t* data, uint64_t len) {
  if (finished_) return Status::Error("payload write after Finish");
  if (offset > payload_bytes_ || len > payload_bytes_ - offset) {
    return Status::Error("payload write of " + Num(len) + " bytes at offset " + Num(offset) +
                         " goes past the " + Num(payload_bytes_) + " payload bytes");
  }
  while (len > 0) {
    // The last segment that begins at or before `offset`.
    const auto after = std::upper_bound(
        segments_.begin(), segments_.end(), offset,
        [](uint64_t at, const PayloadSegment& segment) { return at < segment.begin; });
    const PayloadSegment& segment = *(after - 1);
    const uint64_t within = offset - segment.begin;
    const uint64_t n = std::min(len, segment.bytes - within);
    if (segment.words != nullptr) {
      StoreWordBytes(segment.words, within, data, n);
    } else {
      std::memcpy(segment.slots + within, data, static_cast<size_t>(n));
    }
    offset += n;
    data += n;
    len -= n;
  }
  return Status::Ok();
}

Status SegmentedLoader::Finish(AnyFilter* out) {
  if (finished_) return Status::Error("Finish called twice");
  finished_ = true;
  return Complete(out);
}

void SegmentedLoader::AddSegment(uint64_t bytes, std::atomic<uint64_t>* words, uint8_t* slots) {
  const uint64_t begin = segments_.empty() ? 0 : segments_.back().begin + segments_.back().bytes;
  segments_.push_back(PayloadSegment{begin, bytes, words, slots});
}

Status LoaderMade(const std::unique_ptr<FilterLoader>& loader) {
  return loader != nullptr ? Status::Ok() : Status::Error("out of memory for the filter loader");
}

}  // namespace bloomgate::codec
