#include "server/metrics/metrics_access.h"

#include <array>
#include <cctype>

#include "server/access/acl_user.h"
#include "server/context/server_context.h"
#include "server/net/admission.h"

namespace bloomgate {
namespace {

// RFC 4648's alphabet; -1 for bytes outside it.
int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::optional<std::string> DecodeBase64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    std::array<int, 4> v{};
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = in[i + j];
      // Padding only at the very end, at most two.
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        ++pad;
        v[j] = 0;
        continue;
      }
      if (pad > 0) return std::nullopt;
      v[j] = Base64Value(c);
      if (v[j] < 0) return std::nullopt;
    }
    const uint32_t bits = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>(bits >> 16);
    if (pad < 2) out += static_cast<char>((bits >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(bits & 0xFF);
  }
  return out;
}

}  // namespace

std::string_view ToString(MetricsAccess access) {
  switch (access) {
    case MetricsAccess::kAllowed: return "allowed";
    case MetricsAccess::kProtectedMode: return "protected mode";
    case MetricsAccess::kNeedsAuth: return "needs auth";
    case MetricsAccess::kWrongCredentials: return "wrong credentials";
    case MetricsAccess::kNotPermitted: return "not permitted";
    case MetricsAccess::kThrottled: return "throttled";
  }
  return "?";
}

std::optional<std::pair<std::string, std::string>> ParseBasicAuth(std::string_view header) {
  constexpr std::string_view kScheme = "basic ";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  }
  std::string_view token = header.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  std::optional<std::string> decoded = DecodeBase64(token);
  if (!decoded) return std::nullopt;
  // The user-id cannot hold a colon (RFC 7617 section 2); the password may.
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(decoded->substr(0, colon), decoded->substr(colon + 1));
}

MetricsAccess DecideMetricsAccess(ServerContext& server, const tcp::endpoint& peer,
                                  const std::optional<std::string>& authorization,
                                  int64_t now_ms) {
  const bool default_nopass = server.acl.DefaultUserNoPass();
  if (ProtectedModeRefuses(server.config.Get(), default_nopass, peer)) {
    return MetricsAccess::kProtectedMode;
  }
  std::shared_ptr<const AclUser> user;
  if (default_nopass) {
    // As a new RESP connection: it runs as "default" without AUTH.
    user = server.acl.Find("default");
  } else {
    if (!authorization) return MetricsAccess::kNeedsAuth;
    auto credentials = ParseBasicAuth(*authorization);
    if (!credentials) return MetricsAccess::kNeedsAuth;
    const std::string address = peer.address().to_string();
    int64_t retry_after_ms = 0;
    if (!server.auth_throttle.Allowed(address, now_ms, &retry_after_ms)) {
      return MetricsAccess::kThrottled;
    }
    user = server.acl.Find(credentials->first);
    if (user == nullptr || !AclPasswordMatches(*user, credentials->second)) {
      server.auth_throttle.RecordFailure(address, now_ms);
      return MetricsAccess::kWrongCredentials;
    }
    server.auth_throttle.RecordSuccess(address);
  }
  const CommandSpec* info = server.commands.Find("info");
  const std::array<std::string_view, 1> args = {"info"};
  if (user == nullptr || !user->enabled || !user->all_keys || info == nullptr ||
      CheckAclPermission(*user, *info, args) != AclDenial::kNone) {
    return MetricsAccess::kNotPermitted;
  }
  return MetricsAccess::kAllowed;
}

}  // namespace bloomgate
