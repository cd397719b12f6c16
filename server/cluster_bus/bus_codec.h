// The cluster bus's wire format (ours, not Redis's binary one). Every
// integer little-endian, written byte by byte.
//
//   header, 20 bytes
//   +-------+---------+------+-------------+------------------------------+
//   | "BGCB"| version | type | body length | checksum                     |
//   |  4 B  |  u16    | u16  |    u32      | u64: CRC-64/Jones over bytes |
//   |       |         |      |             | 0..11 of the header and body |
//   +-------+---------+------+-------------+------------------------------+
//   body: fields, each  tag u16 | length u32 | value
//
// A tag with its top bit set is optional: a decoder that does not know it
// skips it, so a later version can add such fields and still talk to this
// one. An unknown tag without that bit, a repeated tag, a missing required
// field, a field whose value is not exactly consumed, trailing bytes, an
// unknown version or type, a body over kBusMaxBodyBytes or a wrong checksum
// refuse the whole message. Version 1's fields:
//
//   1 sender  (required)  id[40] | ip: u8 n, n bytes (0..45) | port u16 |
//                         cport u16 | flags u16 | master: u8 n (0 or 40),
//                         n bytes | current epoch u64 | config epoch u64
//   2 slots   (required)  ranges: u16 count | count x (first u16, last u16),
//                         ascending, first <= last < 16384, never touching
//   3 gossip  (PING, PONG, MEET; required there)  u16 count | count x
//                         (id[40] | ip: u8 n, n bytes (1..45) | port u16 |
//                         cport u16 | flags u16 | ping sent u32 |
//                         pong received u32)
//   4 update  (UPDATE; required there)  id[40] | config epoch u64 | ranges
//   0x8005 replication offset (optional; sent when not 0)  u64: the
//                         sender's offset (a replica's in its master's
//                         stream); absent (or from a peer before it): 0
//   0x8006 fail (optional)  id[40]: Redis's FAIL message, carried by a PONG:
//                         that node is failing by a majority of masters
//   0x8007 message flags (optional; sent when not 0)  u16: bit 0 FORCEACK
//                         (an AUTH_REQUEST of a manual failover), bit 1
//                         PAUSED (a master paused for a manual failover);
//                         other bits are a later version's, kept, ignored
//
// Types: 0 PING, 1 PONG, 2 MEET (fields 1, 2, 3), 3 UPDATE (1, 2, 4),
// 4 AUTH_REQUEST and 5 AUTH_ACK (1 and 2 only: a header, as Redis's),
// 6 MFSTART (1 and 2 only).
//
// Slot ranges rather than Redis's 2,048-byte bitmap: a master of a
// 100-node cluster holds one or a few ranges, 4 bytes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/cluster_bus/bus_message.h"

namespace bloomgate {

inline constexpr char kBusMagic[4] = {'B', 'G', 'C', 'B'};
inline constexpr uint16_t kBusVersion = 1;
inline constexpr size_t kBusHeaderBytes = 20;
// Far above any real message: a PING of a 1,000-node cluster gossips about
// ~100 nodes (~6 KB) plus its ranges (at most 32 KB for 8,192 ranges).
inline constexpr uint32_t kBusMaxBodyBytes = 256 * 1024;

enum class BusDecodeStatus {
  kOk,
  kNeedMore,            // a header or body not complete yet
  kBadMagic,
  kUnsupportedVersion,
  kUnknownType,
  kOversized,
  kBadChecksum,
  kMalformed,           // a field missing, repeated, unknown, short or out of range
};
const char* ToString(BusDecodeStatus status);

struct BusHeader {
  uint16_t version = 0;
  uint16_t type = 0;
  uint32_t body_length = 0;
  uint64_t checksum = 0;
};

// Appends the encoded message (header and body) to *out.
void EncodeBusMessage(const BusMessage& message, std::string* out);

// Reads a header from the first kBusHeaderBytes of `bytes` and checks magic,
// version, type and length (not the checksum: that needs the body). kNeedMore
// when fewer bytes are there; the caller then knows how much body to wait for
// before allocating anything.
BusDecodeStatus DecodeBusHeader(std::string_view bytes, BusHeader* header);

// Decodes one whole message from the start of `bytes`. On kOk, *consumed is
// its length (header and body); on any other status *message is unspecified.
BusDecodeStatus DecodeBusMessage(std::string_view bytes, BusMessage* message, size_t* consumed);

}  // namespace bloomgate
