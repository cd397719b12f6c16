#include "server/net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstring>

#include "config/config_params.h"

namespace bloomgate {
namespace {

// OpenSSL's reason for the failure just reported, e.g. "No such file or
// directory" or "key values mismatch"; the queue is emptied so the next call
// starts clean. A failed fopen queues the errno first and then generic
// "system lib" entries on top, so a system error anywhere in the queue wins.
std::string OpenSslReason() {
  std::string reason;
  unsigned long code = 0;
  while ((code = ERR_get_error()) != 0) {
    if (ERR_SYSTEM_ERROR(code)) {
      reason = std::strerror(ERR_GET_REASON(code));
      break;
    }
    const char* text = ERR_reason_error_string(code);
    reason = text != nullptr ? text : "error " + std::to_string(code);
  }
  ERR_clear_error();
  return reason.empty() ? "unknown OpenSSL error" : reason;
}

bool Fail(std::string* error, std::string what) {
  *error = std::move(what) + ": " + OpenSslReason();
  return false;
}

bool Configure(const ServerConfig& config, ssl::context& context, std::string* error) {
  SSL_CTX* handle = context.native_handle();
  if (config.tls_cert_file.empty()) {
    *error = "tls-cert-file is not set";
    return false;
  }
  if (config.tls_key_file.empty()) {
    *error = "tls-key-file is not set";
    return false;
  }
  const bool verify_clients = config.tls_auth_clients != ServerConfig::TlsAuthClients::kNo;
  // Redis's rule: client certificates can only be checked against a CA.
  if (verify_clients && config.tls_ca_cert_file.empty() && config.tls_ca_cert_dir.empty()) {
    *error = "tls-auth-clients is yes or optional but neither tls-ca-cert-file nor "
             "tls-ca-cert-dir is set";
    return false;
  }
  const std::optional<unsigned> protocols = ParseTlsProtocols(config.tls_protocols);
  if (!protocols) {
    *error = "invalid tls-protocols '" + config.tls_protocols + "'";
    return false;
  }

  // SSLv2/3 are never offered; the TLS versions not listed are switched off
  // one by one, as Redis does (a list need not be a contiguous range).
  long options = SSL_OP_NO_SSLv2 | SSL_OP_NO_SSLv3 | SSL_OP_NO_COMPRESSION;
  if (!(*protocols & kTlsV1)) options |= SSL_OP_NO_TLSv1;
  if (!(*protocols & kTlsV1_1)) options |= SSL_OP_NO_TLSv1_1;
  if (!(*protocols & kTlsV1_2)) options |= SSL_OP_NO_TLSv1_2;
  if (!(*protocols & kTlsV1_3)) options |= SSL_OP_NO_TLSv1_3;
  // A client may not renegotiate: each renegotiation costs the server a
  // full handshake, a cheap way for one client to burn a core.
  options |= SSL_OP_NO_RENEGOTIATION;
  if (config.tls_prefer_server_ciphers) options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
  SSL_CTX_set_options(handle, options);
  SSL_CTX_set_dh_auto(handle, 1);

  // Always a callback, even without a passphrase: OpenSSL's default one
  // asks on the terminal, which would block the server on an encrypted key.
  const std::string pass = config.tls_key_file_pass;
  context.set_password_callback([pass](size_t, ssl::context::password_purpose) { return pass; });
  if (SSL_CTX_use_certificate_chain_file(handle, config.tls_cert_file.c_str()) != 1) {
    return Fail(error, "cannot load tls-cert-file '" + config.tls_cert_file + "'");
  }
  if (SSL_CTX_use_PrivateKey_file(handle, config.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Fail(error, "cannot load tls-key-file '" + config.tls_key_file + "'");
  }
  if (SSL_CTX_check_private_key(handle) != 1) {
    return Fail(error, "tls-key-file '" + config.tls_key_file +
                           "' does not match tls-cert-file '" + config.tls_cert_file + "'");
  }
  if (!config.tls_ca_cert_file.empty() || !config.tls_ca_cert_dir.empty()) {
    const char* file = config.tls_ca_cert_file.empty() ? nullptr : config.tls_ca_cert_file.c_str();
    const char* dir = config.tls_ca_cert_dir.empty() ? nullptr : config.tls_ca_cert_dir.c_str();
    if (SSL_CTX_load_verify_locations(handle, file, dir) != 1) {
      return Fail(error, "cannot load CA certificates from tls-ca-cert-file '" +
                             config.tls_ca_cert_file + "' / tls-ca-cert-dir '" +
                             config.tls_ca_cert_dir + "'");
    }
  }
  if (!config.tls_ciphers.empty() &&
      SSL_CTX_set_cipher_list(handle, config.tls_ciphers.c_str()) != 1) {
    return Fail(error, "invalid tls-ciphers '" + config.tls_ciphers + "'");
  }
  if (!config.tls_ciphersuites.empty() &&
      SSL_CTX_set_ciphersuites(handle, config.tls_ciphersuites.c_str()) != 1) {
    return Fail(error, "invalid tls-ciphersuites '" + config.tls_ciphersuites + "'");
  }

  switch (config.tls_auth_clients) {
    case ServerConfig::TlsAuthClients::kNo:
      SSL_CTX_set_verify(handle, SSL_VERIFY_NONE, nullptr);
      break;
    case ServerConfig::TlsAuthClients::kOptional:
      SSL_CTX_set_verify(handle, SSL_VERIFY_PEER, nullptr);
      break;
    case ServerConfig::TlsAuthClients::kYes:
      SSL_CTX_set_verify(handle, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  // Session resumption skips the signature of a full handshake. OpenSSL
  // refuses to resume a session of a context that verifies clients unless
  // the context has an id, so it always gets one.
  SSL_CTX_set_session_cache_mode(handle, SSL_SESS_CACHE_SERVER);
  static constexpr unsigned char kSessionIdContext[] = "bloomgate";
  SSL_CTX_set_session_id_context(handle, kSessionIdContext, sizeof(kSessionIdContext) - 1);
  return true;
}

}  // namespace

std::shared_ptr<ssl::context> BuildTlsContext(const ServerConfig& config, std::string* error) {
  ERR_clear_error();
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  if (!Configure(config, *context, error)) return nullptr;
  return context;
}

}  // namespace bloomgate
