// DUMP / RESTORE payloads: one filter as a self-checking string a client
// copies from one server to another (redis-cli, redis-py's dump/restore).
//
// Not Redis's RDB encoding (no Redis could load a filter anyway): the
// filter is encoded with the snapshot codec (persistence/codec/, the same
// header and payload SAVE writes, every family), framed like this
// (little-endian, as persistence/byte_io.h):
//
//   +0       4  magic "BGDP"
//   +4       u16 payload format version   1
//   +6       u8  filter kind              FilterKind
//   +7       u32 header length H          <= kMaxSnapshotFilterHeaderBytes
//   +11      H   FilterHeader bytes       (codec/<family>_codec.cc)
//   +11+H    u64 payload length P
//   +19+H    P   payload bytes
//   end      u64 checksum                 XXH64 (seed 0) of every byte before it
//
// Redis ends its payload with a 2-byte RDB version and a CRC-64; ours puts
// the version up front (it is checked first, before anything it governs is
// parsed) and ends with XXH64: 64 bits like Redis's CRC, so a random
// damage passes with probability 2^-64, several times faster than CRC-64
// (~10 GB/s against ~2 GB/s for table-driven CRC-64), and its output is
// frozen by the xxHash specification, so a payload dumped by one build is
// checked the same by any other.
//
// Decoding runs the snapshot loader's checks (FilterLoader::Begin and
// Finish, with the server's per-filter limit and its memory budget), so a
// payload RESTORE accepts is one the snapshot loader accepts too.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "filters/any_filter.h"
#include "filters/limits.h"
#include "filters/memory_budget.h"
#include "persistence/codec/filter_kind.h"
#include "persistence/filter_codec.h"

struct XXH64_state_s;  // xxhash.h's streaming state

namespace bloomgate {

inline constexpr uint16_t kDumpPayloadVersion = 1;
inline constexpr std::string_view kDumpPayloadMagic = "BGDP";
// Magic, version, kind, header length, payload length and checksum: every
// byte of a payload but the header's and the filter's own.
inline constexpr uint64_t kDumpPayloadFixedBytes = 4 + 2 + 1 + 4 + 8 + 8;

enum class DumpPayloadError : uint8_t {
  kNone,
  // Too short, not ours, another format version, or a checksum mismatch:
  // Redis's "DUMP payload version or checksum are wrong".
  kVersionOrChecksum,
  // Intact framing and checksum around contents the codec refuses (only a
  // crafted payload gets here): Redis's "Bad data format".
  kBadData,
  // The filter it describes does not fit the memory budget (-OOM).
  kOutOfMemory,
  // ... or is larger than the per-filter limit (max-filter-memory).
  kFilterTooLarge,
};

// The payload of `filter` as it is now. A counting or cuckoo filter must not
// be written meanwhile; a Bloom filter's adds may run (its header fixes the
// layers, bits are only ever set), but the server holds the key exclusively
// so header and bits are of one moment.
std::string EncodeDumpPayload(const AnyFilter& filter);

// The same bytes as EncodeDumpPayload, handed out in pieces of at most
// kPieceBytes payload bytes, never built whole: MIGRATE writes each piece to
// the socket as it is made, so a 64 MiB filter costs one 4 MiB buffer
// instead of a 64 MiB string that is zero-filled, filled and checksummed
// before its first byte is sent. The same rules as EncodeDumpPayload: the
// filter must not change while the stream runs.
class DumpPayloadStream {
 public:
  static constexpr uint64_t kPieceBytes = uint64_t{4} << 20;

  explicit DumpPayloadStream(const AnyFilter& filter);
  ~DumpPayloadStream();
  DumpPayloadStream(const DumpPayloadStream&) = delete;
  DumpPayloadStream& operator=(const DumpPayloadStream&) = delete;

  // Every byte the stream hands out, known before the first.
  uint64_t size() const { return size_; }
  // The next piece into *piece (its old contents replaced); false once the
  // checksum, the last piece, has been handed out.
  bool Next(std::string* piece);

 private:
  const AnyFilter& filter_;
  FilterHeader header_;
  uint64_t size_ = 0;
  uint64_t copied_ = 0;  // payload bytes handed out
  bool framed_ = false;  // the framing before the payload was handed out
  bool done_ = false;
  ::XXH64_state_s* hash_ = nullptr;
};

// Rebuilds the filter of `payload` into *out: our own payload (above) or a
// Redis DUMP payload of one of RedisBloom's five types
// (redis_dump_payload.h), told apart by the magic., charged to `budget` (may be
// null) and within `limits`. On any error *out is left as it was and
// nothing stays reserved; *why (optional) says what was wrong, for tests
// and the fuzz target.
DumpPayloadError DecodeDumpPayload(std::string_view payload, const FilterLimits& limits,
                                   MemoryBudget* budget, AnyFilter* out,
                                   std::string* why = nullptr);

// The codec step of a decode, shared with the RedisBloom readers: a filter
// image (its kind, codec header bytes, and payload bytes given as pieces
// that are written back to back and must add up to payload_bytes) through
// FilterLoader, with the errors classified as above.
// The first step of LoadFilterImage, for a caller that writes the payload
// itself as it arrives (dump_payload_assembly.h): FilterLoader::Begin with
// its refusal classified.
DumpPayloadError BeginFilterImage(FilterKind kind, std::string_view header_bytes,
                                  uint64_t payload_bytes, const FilterLimits& limits,
                                  MemoryBudget* budget, std::unique_ptr<FilterLoader>* loader,
                                  std::string* why);

DumpPayloadError LoadFilterImage(FilterKind kind, std::string_view header_bytes,
                                 uint64_t payload_bytes, std::span<const std::string_view> pieces,
                                 const FilterLimits& limits, MemoryBudget* budget, AnyFilter* out,
                                 std::string* why);

}  // namespace bloomgate
