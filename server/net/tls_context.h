// The server side of TLS: an OpenSSL context built from the tls-* settings,
// and the holder that hands the current one to each new connection.
//
// A context is immutable once built. Reloading certificates (CONFIG SET of a
// tls-* setting) builds a whole new context and swaps it in; connections
// hold a shared_ptr to the one they started with, so open sessions keep
// their certificates and a file that does not load changes nothing.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "config/server_config.h"
#include "server/net/asio_ssl.h"

namespace bloomgate {

// A context for the TLS listener, or nullptr with *error naming the setting
// or file that failed and OpenSSL's reason ("cannot load tls-cert-file
// '/x.crt': No such file or directory").
std::shared_ptr<ssl::context> BuildTlsContext(const ServerConfig& config, std::string* error);

class TlsContextHolder {
 public:
  std::shared_ptr<ssl::context> current() const {
    std::lock_guard lock(mutex_);
    return context_;
  }
  void Install(std::shared_ptr<ssl::context> context) {
    std::lock_guard lock(mutex_);
    context_ = std::move(context);
  }

 private:
  // Taken once per accepted TLS connection and per reload: never contended
  // on a hot path, so a mutex rather than atomic<shared_ptr>.
  mutable std::mutex mutex_;
  std::shared_ptr<ssl::context> context_;
};

}  // namespace bloomgate
