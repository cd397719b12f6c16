#include "persistence/dump_payload_assembly.h"

#include <xxhash.h>

#include <algorithm>

#include "persistence/byte_io.h"
#include "persistence/codec/codec_registry.h"
#include "persistence/snapshot_file.h"

namespace bloomgate {
namespace {

constexpr uint64_t kChecksumBytes = 8;
// Magic, version, kind, header length: enough to know the framing's length.
constexpr uint64_t kLeadBytes = 4 + 2 + 1 + 4;

DumpPayloadError Refuse(DumpPayloadError error, std::string* why, std::string_view message) {
  if (why != nullptr) *why = std::string(message);
  return error;
}

}  // namespace

DumpPayloadAssembly::DumpPayloadAssembly(const FilterLimits& limits, MemoryBudget* budget)
    : limits_(limits), budget_(budget), hash_(XXH64_createState()) {
  XXH64_reset(hash_, 0);
}

DumpPayloadAssembly::~DumpPayloadAssembly() { XXH64_freeState(hash_); }

bool DumpPayloadAssembly::complete() const {
  return loader_ != nullptr && received_ == framing_bytes_ + payload_bytes_ + kChecksumBytes;
}

DumpPayloadError DumpPayloadAssembly::TakeFraming(std::string* why) {
  using E = DumpPayloadError;
  ByteReader r(framing_);
  std::string_view magic;
  uint16_t version = 0;
  uint8_t kind = 0;
  uint32_t header_length = 0;
  (void)r.GetBytes(kDumpPayloadMagic.size(), &magic);
  (void)r.GetU16(&version);
  (void)r.GetU8(&kind);
  (void)r.GetU32(&header_length);
  // A Redis DUMP payload is never chunked: MIGRATE only chunks our own.
  if (magic != kDumpPayloadMagic) {
    return Refuse(E::kVersionOrChecksum, why, "not a Bloomgate payload");
  }
  if (version != kDumpPayloadVersion) {
    return Refuse(E::kVersionOrChecksum, why, "another payload format version");
  }
  if (header_length > kMaxSnapshotFilterHeaderBytes) {
    return Refuse(E::kBadData, why, "header longer than the format allows");
  }
  framing_bytes_ = kLeadBytes + header_length + 8;
  if (framing_.size() < framing_bytes_) return E::kNone;  // more to come
  std::string_view header_bytes;
  (void)r.GetBytes(header_length, &header_bytes);
  (void)r.GetU64(&payload_bytes_);
  if (!IsKnownFilterKind(kind)) return Refuse(E::kBadData, why, "unknown filter kind");
  const E begun = BeginFilterImage(static_cast<FilterKind>(kind), header_bytes, payload_bytes_,
                                   limits_, budget_, &loader_, why);
  if (begun != E::kNone) return begun;
  XXH64_update(hash_, framing_.data(), framing_bytes_);
  std::string().swap(framing_);
  return E::kNone;
}

DumpPayloadError DumpPayloadAssembly::Append(std::string_view bytes, std::string* why) {
  using E = DumpPayloadError;
  while (!bytes.empty()) {
    if (loader_ == nullptr) {
      // Framing: gathered up to the length it is known to have so far.
      const uint64_t want = framing_bytes_ == 0 ? kLeadBytes : framing_bytes_;
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(want - framing_.size(), bytes.size()));
      framing_.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
      received_ += n;
      if (framing_.size() == want) {
        const E taken = TakeFraming(why);
        if (taken != E::kNone) return taken;
      }
      continue;
    }
    const uint64_t at = received_ - framing_bytes_;
    if (at < payload_bytes_) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(payload_bytes_ - at, bytes.size()));
      const Status status =
          loader_->Write(at, reinterpret_cast<const uint8_t*>(bytes.data()), n);
      if (!status.ok()) return Refuse(E::kBadData, why, status.message());
      XXH64_update(hash_, bytes.data(), n);
      bytes.remove_prefix(n);
      received_ += n;
      continue;
    }
    if (checksum_.size() + bytes.size() > kChecksumBytes) {
      return Refuse(E::kBadData, why, "bytes past the payload's checksum");
    }
    checksum_.append(bytes);
    received_ += bytes.size();
    bytes = {};
  }
  return E::kNone;
}

DumpPayloadError DumpPayloadAssembly::Finish(AnyFilter* out, std::string* why) {
  using E = DumpPayloadError;
  if (!complete()) return Refuse(E::kVersionOrChecksum, why, "payload shorter than its framing");
  uint64_t stored = 0;
  (void)ByteReader(checksum_).GetU64(&stored);
  if (stored != XXH64_digest(hash_)) return Refuse(E::kVersionOrChecksum, why, "checksum mismatch");
  AnyFilter filter;
  const Status status = loader_->Finish(&filter);
  loader_.reset();
  if (!status.ok()) return Refuse(E::kBadData, why, status.message());
  *out = std::move(filter);
  return E::kNone;
}

}  // namespace bloomgate
