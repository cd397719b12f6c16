#include "persistence/dump_chunk.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>
#include <utility>

#include "persistence/byte_io.h"
#include "persistence/codec/codec_registry.h"
#include "persistence/redisbloom_dump.h"

namespace bloomgate {
namespace {

// The bytes drawn in dump_chunk.h.
constexpr std::string_view kMagic = "BGDC";
// 2: the header chunk's filter header carries the filter's hash seed (layout
// version 2); chunks of version 1 (seed 0) still load.
constexpr uint8_t kChunkFormatVersion = 2;
constexpr uint8_t kOldestChunkFormatVersion = 1;
constexpr uint8_t kHeaderChunk = 1;
constexpr uint8_t kPayloadChunk = 2;
constexpr size_t kPrefixBytes = 4 + 1 + 1 + 1 + 8;         // magic .. header id: 15
constexpr size_t kChecksumBytes = 8;
constexpr size_t kHeaderChunkFixedBytes = kPrefixBytes + 8 + 4 + kChecksumBytes;    // 35
constexpr size_t kPayloadChunkFixedBytes = kPrefixBytes + 8 + 8 + kChecksumBytes;   // 39
static_assert(kPayloadChunkFixedBytes == kPayloadChunkFramingBytes);

uint64_t HeaderId(std::string_view header_bytes, uint64_t state_tag) {
  return XXH3_64bits_withSeed(header_bytes.data(), header_bytes.size(), state_tag);
}

uint64_t Checksum(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

void PutPrefix(ByteWriter* w, uint8_t type, FilterKind kind, uint64_t header_id) {
  w->PutBytes(kMagic);
  w->PutU8(kChunkFormatVersion);
  w->PutU8(type);
  w->PutU8(static_cast<uint8_t>(kind));
  w->PutU64(header_id);
}

void PutChecksum(std::string* chunk) {
  const uint64_t sum = Checksum(*chunk);
  ByteWriter(chunk).PutU64(sum);
}

std::string Hex(uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

// The fields every chunk starts with, after framing and checksum checks.
struct ChunkPrefix {
  uint8_t type = 0;
  uint8_t kind = 0;
  uint64_t header_id = 0;
};

// Checks magic, version and checksum, reads the prefix and leaves `body`
// as the bytes between the prefix and the checksum.
Status OpenChunk(std::string_view chunk, ChunkPrefix* prefix, std::string_view* body) {
  if (chunk.size() < kPrefixBytes + kChecksumBytes) {
    return Status::Error("dump chunk too short (" + std::to_string(chunk.size()) +
                         " bytes, at least " + std::to_string(kPrefixBytes + kChecksumBytes) +
                         ")");
  }
  if (chunk.substr(0, kMagic.size()) != kMagic) {
    return Status::Error("not a Bloomgate dump chunk (bad magic)");
  }
  ByteReader r(chunk);
  std::string_view magic;
  uint8_t version = 0;
  r.GetBytes(kMagic.size(), &magic);
  r.GetU8(&version);
  if (version < kOldestChunkFormatVersion || version > kChunkFormatVersion) {
    return Status::Error("dump chunk format version " + std::to_string(version) +
                         " not supported (expected " + std::to_string(kOldestChunkFormatVersion) +
                         " to " + std::to_string(kChunkFormatVersion) + ")");
  }
  const std::string_view covered = chunk.substr(0, chunk.size() - kChecksumBytes);
  uint64_t stored = 0;
  ByteReader(chunk.substr(covered.size())).GetU64(&stored);
  if (const uint64_t actual = Checksum(covered); actual != stored) {
    return Status::Error("dump chunk checksum mismatch: expected " + Hex(stored) + ", got " +
                         Hex(actual));
  }
  r.GetU8(&prefix->type);
  r.GetU8(&prefix->kind);
  r.GetU64(&prefix->header_id);
  *body = covered.substr(kPrefixBytes);
  return Status::Ok();
}

Status CheckKind(uint8_t kind, FilterKind expected) {
  if (kind == static_cast<uint8_t>(expected)) return Status::Ok();
  const std::string found =
      IsKnownFilterKind(kind) ? std::string(ToString(static_cast<FilterKind>(kind)))
                             : "unknown kind " + std::to_string(kind);
  return Status::Error("dump chunk holds a " + found + " filter, expected " +
                       std::string(ToString(expected)));
}

}  // namespace

void NextDumpChunk(const AnyFilter& filter, uint64_t iterator, uint64_t* next_iterator,
                   std::string* chunk, uint64_t max_payload_bytes, uint64_t state_tag) {
  chunk->clear();
  *next_iterator = 0;
  // Each call describes the filter anew: the header is small (<= 512 KiB),
  // and its id is what ties this chunk to the header chunk.
  const FilterHeader header = DescribeFilter(filter);
  const uint64_t header_id = HeaderId(header.bytes, state_tag);
  ByteWriter w(chunk);
  if (iterator == 0) {
    PutPrefix(&w, kHeaderChunk, header.kind, header_id);
    w.PutU64(header.payload_bytes);
    w.PutString(header.bytes);
    PutChecksum(chunk);
    *next_iterator = 1;
    return;
  }
  const uint64_t offset = iterator - 1;
  if (offset >= header.payload_bytes) return;  // the end: [0, ""]
  const uint64_t n = std::min({header.payload_bytes - offset, std::max<uint64_t>(max_payload_bytes, 1),
                               kDumpChunkPayloadBytes});
  chunk->reserve(static_cast<size_t>(kPayloadChunkFixedBytes + n));
  PutPrefix(&w, kPayloadChunk, header.kind, header_id);
  w.PutU64(offset);
  w.PutU64(n);
  const size_t at = chunk->size();
  chunk->resize(at + static_cast<size_t>(n));
  CopyPayload(filter, header, offset, reinterpret_cast<uint8_t*>(chunk->data() + at), n);
  PutChecksum(chunk);
  *next_iterator = iterator + n;
}

bool IsHeaderChunk(std::string_view chunk) {
  return chunk.size() >= kPrefixBytes && chunk.substr(0, kMagic.size()) == kMagic &&
         static_cast<uint8_t>(chunk[5]) == kHeaderChunk;
}

ChunkedFilterLoad::ChunkedFilterLoad(FilterKind kind, uint64_t header_id, uint64_t payload_bytes,
                                     std::unique_ptr<FilterLoader> loader, bool redisbloom)
    : kind_(kind),
      header_id_(header_id),
      payload_bytes_(payload_bytes),
      loader_(std::move(loader)),
      redisbloom_(redisbloom) {}

Status ChunkedFilterLoad::StartRedisBloom(std::string_view header_chunk,
                                          const FilterLimits& limits, MemoryBudget* budget,
                                          std::unique_ptr<ChunkedFilterLoad>* out) {
  out->reset();
  std::string header_bytes;
  uint64_t payload_bytes = 0;
  if (Status s = RedisBloomHeaderToFilterHeader(header_chunk, &header_bytes, &payload_bytes);
      !s.ok()) {
    return s;
  }
  std::unique_ptr<FilterLoader> loader;
  if (Status s = FilterLoader::Begin(FilterKind::kScalableBloom, header_bytes, payload_bytes,
                                     limits, budget, &loader);
      !s.ok()) {
    return s;
  }
  out->reset(new (std::nothrow) ChunkedFilterLoad(FilterKind::kScalableBloom, /*header_id=*/0,
                                                  payload_bytes, std::move(loader),
                                                  /*redisbloom=*/true));
  if (*out == nullptr) return Status::Error("out of memory for the dump loader");
  return Status::Ok();
}

Status ChunkedFilterLoad::AddRedisBloom(uint64_t iterator, std::string_view data) {
  if (loader_ == nullptr) return Status::Error("dump load already finished");
  if (!redisbloom_) return Status::Error("a RedisBloom data chunk for a Bloomgate dump");
  const uint64_t n = data.size();
  if (n == 0) return Status::Error("empty RedisBloom data chunk");
  // RedisBloom's SBChain_LoadEncodedChunk: the piece starts at iter - n - 1.
  if (iterator < n + 1) {
    return Status::Error("iterator " + std::to_string(iterator) + " before a " +
                         std::to_string(n) + "-byte chunk");
  }
  const uint64_t offset = iterator - n - 1;
  if (offset != loaded_bytes_) {
    return Status::Error("RedisBloom chunk at offset " + std::to_string(offset) + ", expected " +
                         std::to_string(loaded_bytes_) + " (chunks must arrive in order)");
  }
  if (n > payload_bytes_ - loaded_bytes_) {
    return Status::Error("RedisBloom chunk of " + std::to_string(n) + " bytes goes past the " +
                         std::to_string(payload_bytes_) + " bytes of the filter");
  }
  if (Status s = loader_->Write(offset, reinterpret_cast<const uint8_t*>(data.data()), n);
      !s.ok()) {
    return s;
  }
  loaded_bytes_ += n;
  return Status::Ok();
}

Status ChunkedFilterLoad::Start(std::string_view header_chunk, FilterKind expected_kind,
                                const FilterLimits& limits, MemoryBudget* budget,
                                std::unique_ptr<ChunkedFilterLoad>* out) {
  out->reset();
  ChunkPrefix prefix;
  std::string_view body;
  if (Status s = OpenChunk(header_chunk, &prefix, &body); !s.ok()) return s;
  if (prefix.type != kHeaderChunk) {
    return Status::Error("expected a header chunk, got chunk type " + std::to_string(prefix.type));
  }
  if (Status s = CheckKind(prefix.kind, expected_kind); !s.ok()) return s;
  ByteReader r(body);
  uint64_t payload_bytes = 0;
  std::string_view header_bytes;
  if (!r.GetU64(&payload_bytes) || !r.GetString(&header_bytes) || r.remaining() != 0) {
    return Status::Error("header chunk body is " + std::to_string(body.size()) +
                         " bytes, which does not match its header length");
  }
  // The header id is not recomputed here: it mixes in the source's state
  // tag, which only the dumping server knew. The checksum covers it, and
  // payload chunks must carry the same one.
  std::unique_ptr<FilterLoader> loader;
  if (Status s = FilterLoader::Begin(expected_kind, header_bytes, payload_bytes, limits, budget,
                                     &loader);
      !s.ok()) {
    return s;
  }
  out->reset(new (std::nothrow)
                 ChunkedFilterLoad(expected_kind, prefix.header_id, payload_bytes, std::move(loader)));
  if (*out == nullptr) return Status::Error("out of memory for the dump loader");
  return Status::Ok();
}

Status ChunkedFilterLoad::Add(std::string_view payload_chunk, bool* other_dump) {
  if (other_dump != nullptr) *other_dump = false;
  if (loader_ == nullptr) return Status::Error("dump load already finished");
  if (redisbloom_) return Status::Error("a Bloomgate payload chunk for a RedisBloom-format load");
  ChunkPrefix prefix;
  std::string_view body;
  if (Status s = OpenChunk(payload_chunk, &prefix, &body); !s.ok()) return s;
  if (prefix.type != kPayloadChunk) {
    return Status::Error("expected a payload chunk, got chunk type " + std::to_string(prefix.type));
  }
  if (Status s = CheckKind(prefix.kind, kind_); !s.ok()) return s;
  if (prefix.header_id != header_id_) {
    if (other_dump != nullptr) *other_dump = true;
    return Status::Error("payload chunk belongs to another dump, or the filter changed after "
                         "its header was dumped (header id " +
                         Hex(prefix.header_id) + ", expected " + Hex(header_id_) + ")");
  }
  ByteReader r(body);
  uint64_t offset = 0;
  uint64_t length = 0;
  if (!r.GetU64(&offset) || !r.GetU64(&length) || r.remaining() != length) {
    return Status::Error("payload chunk body is " + std::to_string(body.size()) +
                         " bytes, which does not match its length field");
  }
  if (length == 0) return Status::Error("empty payload chunk");
  if (offset != loaded_bytes_) {
    return Status::Error("payload chunk at offset " + std::to_string(offset) + ", expected " +
                         std::to_string(loaded_bytes_) +
                         " (chunks must arrive in order, each once)");
  }
  if (length > payload_bytes_ - loaded_bytes_) {
    return Status::Error("payload chunk of " + std::to_string(length) + " bytes at offset " +
                         std::to_string(offset) + " goes past the " +
                         std::to_string(payload_bytes_) + " payload bytes");
  }
  std::string_view data;
  r.GetBytes(static_cast<size_t>(length), &data);
  if (Status s = loader_->Write(offset, reinterpret_cast<const uint8_t*>(data.data()), length);
      !s.ok()) {
    return s;
  }
  loaded_bytes_ += length;
  return Status::Ok();
}

Status ChunkedFilterLoad::Finish(AnyFilter* out) {
  if (loader_ == nullptr) return Status::Error("dump load already finished");
  if (!complete()) {
    return Status::Error("dump incomplete: " + std::to_string(loaded_bytes_) + " of " +
                         std::to_string(payload_bytes_) + " payload bytes loaded");
  }
  const Status status = loader_->Finish(out);
  loader_.reset();
  return status;
}

}  // namespace bloomgate
