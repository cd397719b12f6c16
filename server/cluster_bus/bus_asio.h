// Boost.Asio for the bus's room, which sits below net/ (whose asio.h it
// cannot include). Boost 1.74's awaitable.hpp uses std::exchange without
// including <utility>, which g++ 12 in C++20 mode rejects: <utility> first.
#pragma once

#include <utility>

#include <boost/asio.hpp>

namespace bloomgate::bus {
namespace asio = boost::asio;
using tcp = boost::asio::ip::tcp;
}  // namespace bloomgate::bus
