// LZF decompression (Marc Lehmann's liblzf format), which Redis uses for
// strings in RDB files and DUMP payloads (RDB_ENC_LZF). A compressed stream
// is a run of items, each starting with a control byte c:
//   c < 32        a literal run: the next c + 1 bytes are copied as they are
//   c >= 32       a back reference: length c >> 5 (7 means "add the next
//                 byte"), plus 2 bytes, copied from (c & 31) x 256 + next
//                 byte + 1 bytes back in the output (overlap allowed)
// Every item is checked against both ends: a damaged stream is refused,
// never read or written out of bounds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomgate {

// The most output one input byte can give: a 3-byte back reference writes
// up to 7 + 255 + 2 = 264 bytes. A declared length past in.size() x this
// is refused before anything is allocated.
inline constexpr uint64_t kLzfMaxExpansion = 88;

// Decompresses `in` into exactly `out_len` bytes in *out; false when the
// stream is damaged or does not come to out_len bytes.
bool LzfDecompress(std::string_view in, uint64_t out_len, std::string* out);

}  // namespace bloomgate
