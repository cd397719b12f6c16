// Who may read /metrics: the RESP port's rules, over HTTP.
//  - Protected mode (net/admission.h): while the default user needs no
//    password, only 127.0.0.1 and ::1 are served; others get 403.
//  - Otherwise, when the default user has a password (requirepass or ACL),
//    every scrape carries HTTP Basic auth (RFC 7617) naming an ACL user and
//    its password, as AUTH user password would: user "default" with
//    requirepass. Failures count towards AUTH's throttle for that address.
//  - The user must be allowed INFO and all keys: the page shows what INFO
//    does and the names of the largest keys.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "server/net/asio.h"

namespace bloomgate {

class ServerContext;

enum class MetricsAccess {
  kAllowed,
  kProtectedMode,     // 403: no password is set and the peer is not loopback
  kNeedsAuth,         // 401: no (or malformed) credentials
  kWrongCredentials,  // 401: unknown user, disabled user or wrong password
  kNotPermitted,      // 403: the user may not run INFO or see every key
  kThrottled,         // 429: too many failed attempts from this address
};
std::string_view ToString(MetricsAccess access);

// RFC 7617: "Basic base64(user:password)" -> {user, password}; nullopt if
// it is not that shape. The scheme name is case-insensitive.
std::optional<std::pair<std::string, std::string>> ParseBasicAuth(std::string_view header);

MetricsAccess DecideMetricsAccess(ServerContext& server, const tcp::endpoint& peer,
                                  const std::optional<std::string>& authorization,
                                  int64_t now_ms);

}  // namespace bloomgate
