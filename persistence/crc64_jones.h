// CRC-64/Jones, the checksum Redis ends every DUMP payload and RDB file with
// (its crc64.c): polynomial 0xad93d23594c935a9, reflected in and out, initial
// value 0, no final xor. Check value: Crc64Jones(0, "123456789") is
// 0xe9c6d914c4b8d9ca. Byte at a time over a 256-entry table: ~0.5-1 GB/s,
// enough for RESTORE payloads and RDB files read once.
#pragma once

#include <cstdint>
#include <string_view>

namespace bloomgate {

// Continues `crc` (0 to start) over `bytes`.
uint64_t Crc64Jones(uint64_t crc, std::string_view bytes);

}  // namespace bloomgate
