#include "config/keyspace_events.h"

#include <array>
#include <utility>

namespace bloomgate {
namespace {

// The class letters in the order keyspaceEventsFlagsToString writes them.
constexpr std::array<std::pair<char, uint32_t>, 11> kClassLetters = {{
    {'g', kNotifyGeneric},
    {'$', kNotifyString},
    {'l', kNotifyList},
    {'s', kNotifySet},
    {'h', kNotifyHash},
    {'z', kNotifyZset},
    {'x', kNotifyExpired},
    {'e', kNotifyEvicted},
    {'t', kNotifyStream},
    {'d', kNotifyModule},
    {'n', kNotifyNew},
}};

}  // namespace

std::optional<uint32_t> ParseKeyspaceEvents(std::string_view letters) {
  uint32_t classes = 0;
  for (char letter : letters) {
    switch (letter) {
      case 'A': classes |= kNotifyAll; continue;
      case 'K': classes |= kNotifyKeyspace; continue;
      case 'E': classes |= kNotifyKeyevent; continue;
      case 'm': classes |= kNotifyKeyMiss; continue;
      default: break;
    }
    bool known = false;
    for (const auto& [class_letter, bit] : kClassLetters) {
      if (letter == class_letter) {
        classes |= bit;
        known = true;
      }
    }
    if (!known) return std::nullopt;
  }
  return classes;
}

std::string KeyspaceEventsText(uint32_t classes) {
  std::string text;
  if ((classes & kNotifyAll) == kNotifyAll) {
    text += 'A';
    if (classes & kNotifyNew) text += 'n';
  } else {
    for (const auto& [letter, bit] : kClassLetters) {
      if (classes & bit) text += letter;
    }
  }
  if (classes & kNotifyKeyspace) text += 'K';
  if (classes & kNotifyKeyevent) text += 'E';
  if (classes & kNotifyKeyMiss) text += 'm';
  return text;
}

}  // namespace bloomgate
