// Boost.Asio's SSL layer over Debian's OpenSSL, for the files that speak
// TLS only: it pulls in OpenSSL's headers, which the rest need not parse.
#pragma once

#include "server/net/asio.h"

#include <boost/asio/ssl.hpp>

namespace bloomgate {
namespace ssl = boost::asio::ssl;
using TlsStream = ssl::stream<tcp::socket>;
}  // namespace bloomgate
