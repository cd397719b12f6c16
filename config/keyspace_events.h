// notify-keyspace-events: Redis's event classes as bits, and the two
// translations between them and the configured letters (notify.c's
// keyspaceEventsStringToFlags / keyspaceEventsFlagsToString, Redis 7.0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bloomgate {

enum KeyspaceEventClass : uint32_t {
  kNotifyKeyspace = 1u << 0,   // K: __keyspace@0__:<key> carries the event
  kNotifyKeyevent = 1u << 1,   // E: __keyevent@0__:<event> carries the key
  kNotifyGeneric = 1u << 2,    // g: del, rename_*, expire, and the filter events
  kNotifyString = 1u << 3,     // $
  kNotifyList = 1u << 4,       // l
  kNotifySet = 1u << 5,        // s
  kNotifyHash = 1u << 6,       // h
  kNotifyZset = 1u << 7,       // z
  kNotifyExpired = 1u << 8,    // x
  kNotifyEvicted = 1u << 9,    // e
  kNotifyStream = 1u << 10,    // t
  kNotifyKeyMiss = 1u << 11,   // m (not part of A)
  kNotifyModule = 1u << 12,    // d
  kNotifyNew = 1u << 13,       // n (not part of A)
};
// A: "g$lshzxetd".
inline constexpr uint32_t kNotifyAll = kNotifyGeneric | kNotifyString | kNotifyList |
                                       kNotifySet | kNotifyHash | kNotifyZset |
                                       kNotifyExpired | kNotifyEvicted | kNotifyStream |
                                       kNotifyModule;

// The classes `letters` name, or nullopt for a letter Redis does not know.
std::optional<uint32_t> ParseKeyspaceEvents(std::string_view letters);
// The letters CONFIG GET shows: "A" for all of kNotifyAll, else each class
// in Redis's order; then K, E, m. n follows A too (Redis 7.0 drops it there,
// so a CONFIG REWRITE would lose it).
std::string KeyspaceEventsText(uint32_t classes);

}  // namespace bloomgate
