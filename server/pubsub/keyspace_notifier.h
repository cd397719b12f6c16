// Keyspace notifications (Redis's notify.c): an event on a key is published
// on "__keyspace@0__:<key>" with the event as the message when class K is
// configured, and on "__keyevent@0__:<event>" with the key as the message
// when E is; only events of a configured class (config/keyspace_events.h)
// are published at all. Bloomgate has database 0 only.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/pubsub/pubsub_hub.h"

namespace bloomgate {

// `configured` is notify-keyspace-events' classes; `event_class` the one
// class the event belongs to (kNotifyGeneric, kNotifyExpired, ...).
void PublishKeyspaceEvent(PubSubHub& hub, uint32_t configured, uint32_t event_class,
                          std::string_view event, std::string_view key, uint64_t limit);

}  // namespace bloomgate
