#include "config/bind_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace bloomgate {
namespace {

bool IsIpLiteral(const std::string& text) {
  unsigned char buffer[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, text.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

}  // namespace

std::optional<std::vector<BindEntry>> ExpandBindAddress(std::string_view word) {
  const bool optional = !word.empty() && word.front() == '-';
  if (optional) word.remove_prefix(1);
  if (word == "*") return std::vector<BindEntry>{{"0.0.0.0", optional}};
  if (word == "::*") return std::vector<BindEntry>{{"::", optional}};
  std::string lower(word);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "localhost") {
    return std::vector<BindEntry>{{"127.0.0.1", optional}, {"::1", /*optional=*/true}};
  }
  std::string literal(word);
  if (!IsIpLiteral(literal)) return std::nullopt;
  return std::vector<BindEntry>{{std::move(literal), optional}};
}

}  // namespace bloomgate
