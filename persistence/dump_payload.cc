#include "persistence/dump_payload.h"

#include <xxhash.h>

#include <algorithm>
#include <memory>

#include "persistence/byte_io.h"
#include "persistence/codec/codec_registry.h"
#include "persistence/filter_codec.h"
#include "persistence/redis_dump_payload.h"
#include "persistence/snapshot_file.h"

namespace bloomgate {
namespace {

constexpr std::string_view kMagic = kDumpPayloadMagic;
constexpr size_t kFixedBytes = kDumpPayloadFixedBytes;  // 27
constexpr size_t kChecksumBytes = 8;

uint64_t Checksum(std::string_view bytes) { return XXH64(bytes.data(), bytes.size(), 0); }

DumpPayloadError Refuse(DumpPayloadError error, std::string* why, std::string message) {
  if (why != nullptr) *why = std::move(message);
  return error;
}

// Magic, version, kind, header, payload length: every byte before the payload.
void PutFraming(const FilterHeader& header, std::string* out) {
  ByteWriter w(out);
  w.PutBytes(kMagic);
  w.PutU16(kDumpPayloadVersion);
  w.PutU8(static_cast<uint8_t>(header.kind));
  w.PutString(header.bytes);
  w.PutU64(header.payload_bytes);
}

}  // namespace

std::string EncodeDumpPayload(const AnyFilter& filter) {
  const FilterHeader header = DescribeFilter(filter);
  std::string out;
  out.reserve(kFixedBytes + header.bytes.size() + static_cast<size_t>(header.payload_bytes));
  PutFraming(header, &out);
  const size_t at = out.size();
  out.resize(at + static_cast<size_t>(header.payload_bytes));
  CopyPayload(filter, header, 0, reinterpret_cast<uint8_t*>(out.data() + at),
              header.payload_bytes);
  const uint64_t sum = Checksum(out);
  ByteWriter(&out).PutU64(sum);
  return out;
}

DumpPayloadStream::DumpPayloadStream(const AnyFilter& filter)
    : filter_(filter), header_(DescribeFilter(filter)), hash_(XXH64_createState()) {
  size_ = kFixedBytes + header_.bytes.size() + header_.payload_bytes;
  XXH64_reset(hash_, 0);
}

DumpPayloadStream::~DumpPayloadStream() { XXH64_freeState(hash_); }

bool DumpPayloadStream::Next(std::string* piece) {
  piece->clear();
  if (done_) return false;
  if (!framed_) {
    PutFraming(header_, piece);
    framed_ = true;
  } else if (copied_ < header_.payload_bytes) {
    const uint64_t n = std::min(kPieceBytes, header_.payload_bytes - copied_);
    piece->resize(static_cast<size_t>(n));
    CopyPayload(filter_, header_, copied_, reinterpret_cast<uint8_t*>(piece->data()), n);
    copied_ += n;
  } else {
    ByteWriter(piece).PutU64(XXH64_digest(hash_));
    done_ = true;
    return true;
  }
  XXH64_update(hash_, piece->data(), piece->size());
  return true;
}

DumpPayloadError DecodeDumpPayload(std::string_view payload, const FilterLimits& limits,
                                   MemoryBudget* budget, AnyFilter* out, std::string* why) {
  using E = DumpPayloadError;
  if (!payload.starts_with(kMagic)) {
    return DecodeRedisDumpPayload(payload, limits, budget, out, why);
  }
  // Framing first: nothing past the magic is trusted before the version
  // says how to read it and the checksum says it is what was dumped.
  if (payload.size() < kFixedBytes) {
    return Refuse(E::kVersionOrChecksum, why, "payload shorter than its framing");
  }
  ByteReader r(payload);
  std::string_view magic;
  uint16_t version = 0;
  (void)r.GetBytes(kMagic.size(), &magic);
  (void)r.GetU16(&version);
  if (magic != kMagic) return Refuse(E::kVersionOrChecksum, why, "not a Bloomgate payload");
  if (version != kDumpPayloadVersion) {
    return Refuse(E::kVersionOrChecksum, why,
                  "payload format version " + std::to_string(version) + ", expected " +
                      std::to_string(kDumpPayloadVersion));
  }
  const std::string_view body = payload.substr(0, payload.size() - kChecksumBytes);
  uint64_t stored = 0;
  (void)ByteReader(payload.substr(body.size())).GetU64(&stored);
  if (stored != Checksum(body)) return Refuse(E::kVersionOrChecksum, why, "checksum mismatch");

  uint8_t kind = 0;
  uint32_t header_length = 0;
  std::string_view header_bytes;
  uint64_t payload_bytes = 0;
  if (!r.GetU8(&kind) || !r.GetU32(&header_length) ||
      header_length > kMaxSnapshotFilterHeaderBytes || !r.GetBytes(header_length, &header_bytes) ||
      !r.GetU64(&payload_bytes)) {
    return Refuse(E::kBadData, why, "truncated header");
  }
  // The payload must be exactly what is left before the checksum; checked
  // before anything is allocated for it.
  const uint64_t consumed = kFixedBytes - kChecksumBytes + header_length;
  if (payload_bytes != body.size() - consumed) {
    return Refuse(E::kBadData, why, "payload length does not match the bytes present");
  }
  if (!IsKnownFilterKind(kind)) return Refuse(E::kBadData, why, "unknown filter kind");
  const std::string_view piece = payload.substr(consumed, payload_bytes);
  return LoadFilterImage(static_cast<FilterKind>(kind), header_bytes, payload_bytes,
                         std::span<const std::string_view>(&piece, 1), limits, budget, out, why);
}

DumpPayloadError BeginFilterImage(FilterKind kind, std::string_view header_bytes,
                                  uint64_t payload_bytes, const FilterLimits& limits,
                                  MemoryBudget* budget, std::unique_ptr<FilterLoader>* loader,
                                  std::string* why) {
  using E = DumpPayloadError;
  const Status status =
      FilterLoader::Begin(kind, header_bytes, payload_bytes, limits, budget, loader);
  if (status.ok()) return E::kNone;
  // The codec refuses an allocation the budget cannot hold with its own
  // message; a valid header whose payload alone no longer fits is that.
  // Likewise the per-filter limit.
  if (limits.max_filter_bytes != 0 && payload_bytes > limits.max_filter_bytes) {
    return Refuse(E::kFilterTooLarge, why, status.message());
  }
  const bool oom = budget != nullptr && budget->limit() != 0 &&
                   budget->used() + payload_bytes > budget->limit();
  return Refuse(oom ? E::kOutOfMemory : E::kBadData, why, status.message());
}

DumpPayloadError LoadFilterImage(FilterKind kind, std::string_view header_bytes,
                                 uint64_t payload_bytes, std::span<const std::string_view> pieces,
                                 const FilterLimits& limits, MemoryBudget* budget, AnyFilter* out,
                                 std::string* why) {
  using E = DumpPayloadError;
  uint64_t given = 0;
  for (const std::string_view piece : pieces) given += piece.size();
  if (given != payload_bytes) {
    return Refuse(E::kBadData, why, "payload length does not match the bytes present");
  }
  std::unique_ptr<FilterLoader> loader;
  const E begun =
      BeginFilterImage(kind, header_bytes, payload_bytes, limits, budget, &loader, why);
  if (begun != E::kNone) return begun;
  Status status = Status::Ok();
  uint64_t at = 0;
  for (const std::string_view piece : pieces) {
    if (!status.ok()) break;
    status = loader->Write(at, reinterpret_cast<const uint8_t*>(piece.data()), piece.size());
    at += piece.size();
  }
  AnyFilter filter;
  if (status.ok()) status = loader->Finish(&filter);
  if (!status.ok()) return Refuse(E::kBadData, why, status.message());
  *out = std::move(filter);
  return E::kNone;
}

}  // namespace bloomgate
