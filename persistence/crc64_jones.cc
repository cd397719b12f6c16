#include "persistence/crc64_jones.h"

#include <array>

namespace bloomgate {
namespace {

// 0xad93d23594c935a9 with its bits reversed: the reflected form's divisor.
constexpr uint64_t kReflectedPoly = 0x95ac9329ac4bc9b5ULL;

constexpr std::array<uint64_t, 256> MakeTable() {
  std::array<uint64_t, 256> table{};
  for (uint64_t i = 0; i < 256; ++i) {
    uint64_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) != 0 ? (crc >> 1) ^ kReflectedPoly : crc >> 1;
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint64_t, 256> kTable = MakeTable();

}  // namespace

uint64_t Crc64Jones(uint64_t crc, std::string_view bytes) {
  for (const char c : bytes) {
    crc = kTable[(crc ^ static_cast<uint8_t>(c)) & 0xff] ^ (crc >> 8);
  }
  return crc;
}

}  // namespace bloomgate
