#include "server/net/admission.h"

#include <spdlog/spdlog.h>

#include "server/base/clock.h"
#include "server/base/log_limiter.h"

namespace bloomgate {
namespace {

LogLimiter protected_mode_log(/*interval_ms=*/1000);

// Redis's connIsLocal for TCP: exactly 127.0.0.1 and ::1 (and 127.0.0.1
// mapped into IPv6), not the rest of 127.0.0.0/8.
bool IsLocalClient(const asio::ip::address& address) {
  if (address.is_v6()) {
    const asio::ip::address_v6 v6 = address.to_v6();
    if (v6.is_v4_mapped()) {
      return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_ulong() == 0x7f000001;
    }
    return v6.is_loopback();
  }
  return address.to_v4().to_ulong() == 0x7f000001;
}

}  // namespace

bool ProtectedModeRefuses(const ServerConfig& config, bool default_user_nopass,
                          const tcp::endpoint& peer) {
  if (!config.protected_mode || !default_user_nopass || IsLocalClient(peer.address())) {
    return false;
  }
  uint64_t suppressed = 0;
  if (protected_mode_log.Allow(NowMs(), &suppressed)) {
    spdlog::warn("refusing a client from {} in protected mode: no password is set "
                 "({} similar suppressed)",
                 peer.address().to_string(), suppressed);
  }
  return true;
}

}  // namespace bloomgate
