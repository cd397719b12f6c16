// The one place Boost.Asio is included. Boost 1.74's awaitable.hpp uses
// std::exchange without including <utility>, which g++ 12 in C++20 mode
// rejects; including it first keeps every translation unit building.
#pragma once

#include <utility>

#include <boost/asio.hpp>

namespace bloomgate {
namespace asio = boost::asio;
using tcp = boost::asio::ip::tcp;
}  // namespace bloomgate
