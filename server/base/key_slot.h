// Redis Cluster's hash slot of a key: CRC16 (XMODEM: polynomial 0x1021, initial
// value 0, no reflection) of the key, or of its hash tag, modulo 16384. The
// hash tag is what lies between the first '{' and the first '}' after it,
// when that is not empty, so `{user1}.a` and `{user1}.b` share a slot; `{}a`
// and `a{` hash whole. Clients compute the same function to route, so it
// must agree with Redis on every key.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate {

inline constexpr std::uint32_t kClusterSlots = 16384;

std::uint16_t Crc16Xmodem(std::string_view bytes);

// The part of a key that is hashed: its hash tag, or the whole key.
std::string_view HashedPart(std::string_view key);

// In [0, kClusterSlots).
std::uint16_t KeySlot(std::string_view key);

}  // namespace bloomgate
