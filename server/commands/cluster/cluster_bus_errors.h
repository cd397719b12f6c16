// Reply texts of CLUSTER MEET / FORGET: Redis 7.0's cluster.c texts.
#pragma once

#include <string>
#include <string_view>

namespace bloomgate::errors {

inline constexpr std::string_view kCantForgetMyself =
    "ERR I tried hard but I can't forget myself...";
inline constexpr std::string_view kCantForgetMyMaster = "ERR Can't forget my master!";
// Ours: only a server started without its bus (an in-process test) says it.
inline constexpr std::string_view kClusterBusDown = "ERR The cluster bus is not running";
inline std::string InvalidTcpBasePort(std::string_view port) {
  return "ERR Invalid TCP base port specified: " + std::string(port.substr(0, 64));
}
inline std::string InvalidTcpBusPort(std::string_view port) {
  return "ERR Invalid TCP bus port specified: " + std::string(port.substr(0, 64));
}
inline std::string InvalidNodeAddress(std::string_view ip, std::string_view port) {
  return "ERR Invalid node address specified: " + std::string(ip.substr(0, 128)) + ":" +
         std::string(port.substr(0, 64));
}

}  // namespace bloomgate::errors
