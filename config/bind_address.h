// The words `bind` takes, as redis.conf takes them, and the IP literals
// each stands for:
//   127.0.0.1, ::1, ...   an IPv4 or IPv6 literal
//   *                     every IPv4 address (0.0.0.0)
//   ::*                   every IPv6 address (::)
//   localhost             127.0.0.1, and ::1 where the host has IPv6; never
//                         looked up (RFC 6761 fixes its meaning), so start-up
//                         does not depend on a resolver
//   -<any of those>       optional: skipped at start-up when the host does not
//                         have that address or family (Redis's "-::1", for a
//                         container without IPv6); every other address still
//                         must bind
// Other host names are refused: resolving them would make start-up depend on
// DNS.
#ifndef BLOOMGATE_CONFIG_BIND_ADDRESS_H_
#define BLOOMGATE_CONFIG_BIND_ADDRESS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

struct BindEntry {
  std::string address;    // an IP literal
  bool optional = false;  // skip it when the host cannot bind it
  bool operator==(const BindEntry&) const = default;
};

// The literals one `bind` word stands for, in binding order; nullopt for a
// word that is none of the forms above.
std::optional<std::vector<BindEntry>> ExpandBindAddress(std::string_view word);

}  // namespace bloomgate

#endif  // BLOOMGATE_CONFIG_BIND_ADDRESS_H_
