#include "server/base/key_slot.h"

#include <array>

namespace bloomgate {
namespace {

constexpr std::array<std::uint16_t, 256> MakeCrc16Table() {
  std::array<std::uint16_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
    }
    table[byte] = static_cast<std::uint16_t>(crc);
  }
  return table;
}

constexpr std::array<std::uint16_t, 256> kCrc16Table = MakeCrc16Table();

}  // namespace

std::uint16_t Crc16Xmodem(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (const char c : bytes) {
    const auto index = static_cast<std::uint8_t>((crc >> 8) ^ static_cast<std::uint8_t>(c));
    crc = static_cast<std::uint16_t>((crc << 8) ^ kCrc16Table[index]);
  }
  return crc;
}

std::string_view HashedPart(std::string_view key) {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t KeySlot(std::string_view key) {
  return static_cast<std::uint16_t>(Crc16Xmodem(HashedPart(key)) & (kClusterSlots - 1));
}

}  // namespace bloomgate
