#include "server/cluster_bus/bus_codec.h"

#include <algorithm>
#include <cstring>

#include "persistence/byte_io.h"
#include "persistence/crc64_jones.h"

namespace bloomgate {
namespace {

enum BusTag : uint16_t {
  kTagSender = 1,
  kTagSlots = 2,
  kTagGossip = 3,
  kTagUpdate = 4,
};
constexpr uint16_t kOptionalTagBit = 0x8000;
// Optional fields this version reads (an older peer skips them).
constexpr uint16_t kTagReplOffset = kOptionalTagBit | 5;
constexpr uint16_t kTagFailAbout = kOptionalTagBit | 6;
constexpr uint16_t kTagMessageFlags = kOptionalTagBit | 7;
// The bytes before the checksum, which the checksum covers with the body.
constexpr size_t kChecksummedHeaderBytes = 12;
// The smallest gossip entry: id, a 1-byte ip and its length, ports, flags, times.
constexpr size_t kMinGossipEntryBytes = kBusNodeIdLength + 1 + 1 + 2 + 2 + 2 + 4 + 4;

bool IsNodeId(std::string_view id) {
  return id.size() == kBusNodeIdLength &&
         std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Only what an IPv4 or IPv6 text address is made of: an address goes into
// CLUSTER NODES lines, which must never carry a space or a line break.
bool IsIpText(std::string_view ip) {
  return ip.size() <= kBusMaxIpLength &&
         std::all_of(ip.begin(), ip.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                  c == '.' || c == ':';
         });
}

void PutShortString(ByteWriter* w, std::string_view s) {
  w->PutU8(static_cast<uint8_t>(s.size()));
  w->PutBytes(s);
}

bool GetShortString(ByteReader* r, std::string* out) {
  uint8_t n = 0;
  std::string_view bytes;
  if (!r->GetU8(&n) || !r->GetBytes(n, &bytes)) return false;
  out->assign(bytes);
  return true;
}

bool GetNodeId(ByteReader* r, std::string* out) {
  std::string_view bytes;
  if (!r->GetBytes(kBusNodeIdLength, &bytes) || !IsNodeId(bytes)) return false;
  out->assign(bytes);
  return true;
}

void PutRanges(ByteWriter* w, const BusSlotBitmap& slots) {
  std::string ranges;
  ByteWriter rw(&ranges);
  uint16_t count = 0;
  for (int slot = 0; slot < kBusSlotCount;) {
    if (!slots.test(slot)) {
      ++slot;
      continue;
    }
    int last = slot;
    while (last + 1 < kBusSlotCount && slots.test(last + 1)) ++last;
    rw.PutU16(static_cast<uint16_t>(slot));
    rw.PutU16(static_cast<uint16_t>(last));
    ++count;
    slot = last + 1;
  }
  w->PutU16(count);
  w->PutBytes(ranges);
}

// Canonical ranges only (ascending, disjoint, not touching), so every bitmap
// has exactly one encoding and a decoded message re-encodes to its bytes.
bool GetRanges(ByteReader* r, BusSlotBitmap* slots) {
  uint16_t count = 0;
  if (!r->GetU16(&count)) return false;
  slots->reset();
  int next_allowed = 0;
  for (uint16_t i = 0; i < count; ++i) {
    uint16_t first = 0, last = 0;
    if (!r->GetU16(&first) || !r->GetU16(&last)) return false;
    if (first < next_allowed || first > last || last >= kBusSlotCount) return false;
    for (int slot = first; slot <= last; ++slot) slots->set(slot);
    next_allowed = last + 2;
  }
  return true;
}

void PutField(ByteWriter* w, uint16_t tag, const std::string& value) {
  w->PutU16(tag);
  w->PutU32(static_cast<uint32_t>(value.size()));
  w->PutBytes(value);
}

std::string SenderField(const BusMessage& m) {
  std::string v;
  ByteWriter w(&v);
  w.PutBytes(m.sender_id);
  PutShortString(&w, m.sender_ip);
  w.PutU16(m.port);
  w.PutU16(m.cport);
  w.PutU16(m.flags);
  PutShortString(&w, m.master_id);
  w.PutU64(m.current_epoch);
  w.PutU64(m.config_epoch);
  return v;
}

std::string GossipField(const std::vector<BusGossipEntry>& gossip) {
  std::string v;
  ByteWriter w(&v);
  w.PutU16(static_cast<uint16_t>(gossip.size()));
  for (const BusGossipEntry& g : gossip) {
    w.PutBytes(g.id);
    PutShortString(&w, g.ip);
    w.PutU16(g.port);
    w.PutU16(g.cport);
    w.PutU16(g.flags);
    w.PutU32(g.ping_sent_s);
    w.PutU32(g.pong_received_s);
  }
  return v;
}

bool DecodeSender(std::string_view value, BusMessage* m) {
  ByteReader r(value);
  if (!GetNodeId(&r, &m->sender_id) || !GetShortString(&r, &m->sender_ip) ||
      !IsIpText(m->sender_ip) || !r.GetU16(&m->port) || !r.GetU16(&m->cport) ||
      !r.GetU16(&m->flags) || !GetShortString(&r, &m->master_id) ||
      !r.GetU64(&m->current_epoch) || !r.GetU64(&m->config_epoch)) {
    return false;
  }
  if (!m->master_id.empty() && !IsNodeId(m->master_id)) return false;
  if (m->port == 0 || m->cport == 0 || (m->flags & ~kBusKnownFlags) != 0) return false;
  return r.remaining() == 0;
}

bool DecodeGossip(std::string_view value, std::vector<BusGossipEntry>* gossip) {
  ByteReader r(value);
  uint16_t count = 0;
  if (!r.GetU16(&count)) return false;
  // Never reserve from a declared count beyond what the bytes can hold.
  if (count > r.remaining() / kMinGossipEntryBytes) return false;
  gossip->clear();
  gossip->reserve(count);
  for (uint16_t i = 0; i < count; ++i) {
    BusGossipEntry g;
    if (!GetNodeId(&r, &g.id) || !GetShortString(&r, &g.ip) || g.ip.empty() ||
        !IsIpText(g.ip) || !r.GetU16(&g.port) || !r.GetU16(&g.cport) || !r.GetU16(&g.flags) ||
        !r.GetU32(&g.ping_sent_s) || !r.GetU32(&g.pong_received_s)) {
      return false;
    }
    if (g.port == 0 || g.cport == 0 || (g.flags & ~kBusKnownFlags) != 0) return false;
    gossip->push_back(std::move(g));
  }
  return r.remaining() == 0;
}

bool DecodeSlots(std::string_view value, BusSlotBitmap* slots) {
  ByteReader r(value);
  return GetRanges(&r, slots) && r.remaining() == 0;
}

bool DecodeUpdate(std::string_view value, BusUpdate* update) {
  ByteReader r(value);
  return GetNodeId(&r, &update->id) && r.GetU64(&update->config_epoch) &&
         GetRanges(&r, &update->slots) && r.remaining() == 0;
}

uint64_t Checksum(std::string_view header_start, std::string_view body) {
  return Crc64Jones(Crc64Jones(0, header_start), body);
}

}  // namespace

const char* ToString(BusMessageType type) {
  switch (type) {
    case BusMessageType::kPing: return "ping";
    case BusMessageType::kPong: return "pong";
    case BusMessageType::kMeet: return "meet";
    case BusMessageType::kUpdate: return "update";
    case BusMessageType::kAuthRequest: return "auth-req";
    case BusMessageType::kAuthAck: return "auth-ack";
    case BusMessageType::kMfStart: return "mfstart";
  }
  return "unknown";
}

const char* ToString(BusDecodeStatus status) {
  switch (status) {
    case BusDecodeStatus::kOk: return "ok";
    case BusDecodeStatus::kNeedMore: return "need more";
    case BusDecodeStatus::kBadMagic: return "bad magic";
    case BusDecodeStatus::kUnsupportedVersion: return "unsupported version";
    case BusDecodeStatus::kUnknownType: return "unknown type";
    case BusDecodeStatus::kOversized: return "oversized";
    case BusDecodeStatus::kBadChecksum: return "bad checksum";
    case BusDecodeStatus::kMalformed: return "malformed";
  }
  return "unknown";
}

void EncodeBusMessage(const BusMessage& m, std::string* out) {
  std::string body;
  ByteWriter bw(&body);
  PutField(&bw, kTagSender, SenderField(m));
  std::string slots;
  ByteWriter sw(&slots);
  PutRanges(&sw, m.slots);
  PutField(&bw, kTagSlots, slots);
  if (m.type == BusMessageType::kUpdate) {
    std::string update;
    ByteWriter uw(&update);
    uw.PutBytes(m.update.id);
    uw.PutU64(m.update.config_epoch);
    PutRanges(&uw, m.update.slots);
    PutField(&bw, kTagUpdate, update);
  } else if (BusTypeHasGossip(m.type)) {
    PutField(&bw, kTagGossip, GossipField(m.gossip));
  }
  if (m.repl_offset != 0) {  // 0 is what its absence means: one encoding per message
    std::string offset;
    ByteWriter ow(&offset);
    ow.PutU64(m.repl_offset);
    PutField(&bw, kTagReplOffset, offset);
  }
  if (!m.fail_about.empty()) PutField(&bw, kTagFailAbout, m.fail_about);
  if (m.message_flags != 0) {  // as the offset: absent means 0
    std::string flags;
    ByteWriter fw(&flags);
    fw.PutU16(m.message_flags);
    PutField(&bw, kTagMessageFlags, flags);
  }

  const size_t start = out->size();
  ByteWriter hw(out);
  hw.PutBytes(std::string_view(kBusMagic, sizeof(kBusMagic)));
  hw.PutU16(kBusVersion);
  hw.PutU16(static_cast<uint16_t>(m.type));
  hw.PutU32(static_cast<uint32_t>(body.size()));
  hw.PutU64(Checksum(std::string_view(*out).substr(start, kChecksummedHeaderBytes), body));
  out->append(body);
}

BusDecodeStatus DecodeBusHeader(std::string_view bytes, BusHeader* header) {
  if (bytes.size() < kBusHeaderBytes) {
    // A wrong magic is refused as soon as its bytes are there, so a peer
    // speaking something else (RESP, Redis's bus) is dropped at once.
    const size_t n = std::min(bytes.size(), sizeof(kBusMagic));
    if (std::memcmp(bytes.data(), kBusMagic, n) != 0) return BusDecodeStatus::kBadMagic;
    return BusDecodeStatus::kNeedMore;
  }
  if (std::memcmp(bytes.data(), kBusMagic, sizeof(kBusMagic)) != 0) {
    return BusDecodeStatus::kBadMagic;
  }
  ByteReader r(bytes.substr(sizeof(kBusMagic), kBusHeaderBytes - sizeof(kBusMagic)));
  r.GetU16(&header->version);
  r.GetU16(&header->type);
  r.GetU32(&header->body_length);
  r.GetU64(&header->checksum);
  if (header->version != kBusVersion) return BusDecodeStatus::kUnsupportedVersion;
  if (header->type >= kBusMessageTypeCount) return BusDecodeStatus::kUnknownType;
  if (header->body_length > kBusMaxBodyBytes) return BusDecodeStatus::kOversized;
  return BusDecodeStatus::kOk;
}

BusDecodeStatus DecodeBusMessage(std::string_view bytes, BusMessage* m, size_t* consumed) {
  BusHeader header;
  if (BusDecodeStatus s = DecodeBusHeader(bytes, &header); s != BusDecodeStatus::kOk) return s;
  if (bytes.size() - kBusHeaderBytes < header.body_length) return BusDecodeStatus::kNeedMore;
  const std::string_view body = bytes.substr(kBusHeaderBytes, header.body_length);
  if (Checksum(bytes.substr(0, kChecksummedHeaderBytes), body) != header.checksum) {
    return BusDecodeStatus::kBadChecksum;
  }

  *m = BusMessage{};
  m->type = static_cast<BusMessageType>(header.type);
  const bool is_update = m->type == BusMessageType::kUpdate;
  const bool has_gossip = BusTypeHasGossip(m->type);
  bool seen[5] = {};
  bool seen_offset = false;
  bool seen_fail = false;
  bool seen_flags = false;
  ByteReader r(body);
  while (r.remaining() > 0) {
    uint16_t tag = 0;
    std::string_view value;
    if (!r.GetU16(&tag) || !r.GetString(&value)) return BusDecodeStatus::kMalformed;
    if (tag == kTagReplOffset) {
      ByteReader vr(value);
      if (seen_offset || !vr.GetU64(&m->repl_offset) || vr.remaining() != 0) {
        return BusDecodeStatus::kMalformed;
      }
      seen_offset = true;
      continue;
    }
    if (tag == kTagFailAbout) {
      ByteReader vr(value);
      if (seen_fail || !GetNodeId(&vr, &m->fail_about) || vr.remaining() != 0) {
        return BusDecodeStatus::kMalformed;
      }
      seen_fail = true;
      continue;
    }
    if (tag == kTagMessageFlags) {
      ByteReader vr(value);
      if (seen_flags || !vr.GetU16(&m->message_flags) || vr.remaining() != 0) {
        return BusDecodeStatus::kMalformed;
      }
      seen_flags = true;
      continue;
    }
    if (tag & kOptionalTagBit) continue;  // a later version's optional field
    if (tag < kTagSender || tag > kTagUpdate || seen[tag]) return BusDecodeStatus::kMalformed;
    seen[tag] = true;
    bool ok = false;
    switch (tag) {
      case kTagSender: ok = DecodeSender(value, m); break;
      case kTagSlots: ok = DecodeSlots(value, &m->slots); break;
      case kTagGossip: ok = has_gossip && DecodeGossip(value, &m->gossip); break;
      case kTagUpdate: ok = is_update && DecodeUpdate(value, &m->update); break;
    }
    if (!ok) return BusDecodeStatus::kMalformed;
  }
  if (!seen[kTagSender] || !seen[kTagSlots] || (is_update && !seen[kTagUpdate]) ||
      (has_gossip && !seen[kTagGossip])) {
    return BusDecodeStatus::kMalformed;
  }
  *consumed = kBusHeaderBytes + header.body_length;
  return BusDecodeStatus::kOk;
}

}  // namespace bloomgate
