#include "server/pubsub/keyspace_notifier.h"

#include <string>

#include "config/keyspace_events.h"

namespace bloomgate {

void PublishKeyspaceEvent(PubSubHub& hub, uint32_t configured, uint32_t event_class,
                          std::string_view event, std::string_view key, uint64_t limit) {
  if ((configured & event_class) == 0 || hub.empty()) return;
  if (configured & kNotifyKeyspace) {
    std::string channel = "__keyspace@0__:";
    channel += key;
    hub.Publish(channel, event, limit);
  }
  if (configured & kNotifyKeyevent) {
    std::string channel = "__keyevent@0__:";
    channel += event;
    hub.Publish(channel, key, limit);
  }
}

}  // namespace bloomgate
