// SHA-256 (FIPS 180-4), for ACL passwords: Redis stores and shows a user's
// passwords as the lowercase hex SHA-256 of the cleartext ("#<64 hex>"), so
// ACL LIST / GETUSER output and `#hash` rules are interchangeable with
// Redis's. A small self-contained implementation instead of OpenSSL: it runs
// only on AUTH and ACL SETUSER, so speed does not matter, and the server
// keeps no crypto dependency for it (tests/unit/server/access/sha256_test.cc checks
// the FIPS test vectors).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace bloomgate {

std::array<uint8_t, 32> Sha256(std::string_view data);
// The digest as 64 lowercase hex digits, Redis's form of a password hash.
std::string Sha256Hex(std::string_view data);

}  // namespace bloomgate
