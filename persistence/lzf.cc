#include "persistence/lzf.h"

#include <cstring>

namespace bloomgate {

bool LzfDecompress(std::string_view in, uint64_t out_len, std::string* out) {
  if (out_len > in.size() * kLzfMaxExpansion) return false;
  out->assign(static_cast<size_t>(out_len), '\0');
  const auto* ip = reinterpret_cast<const uint8_t*>(in.data());
  const uint8_t* const in_end = ip + in.size();
  auto* const base = reinterpret_cast<uint8_t*>(out->data());
  uint8_t* op = base;
  uint8_t* const out_end = base + out_len;
  while (ip < in_end) {
    const uint32_t ctrl = *ip++;
    if (ctrl < 32) {
      const size_t run = ctrl + 1;
      if (static_cast<size_t>(in_end - ip) < run || static_cast<size_t>(out_end - op) < run) {
        return false;
      }
      std::memcpy(op, ip, run);
      op += run;
      ip += run;
      continue;
    }
    size_t len = ctrl >> 5;
    if (len == 7) {
      if (ip >= in_end) return false;
      len += *ip++;
    }
    if (ip >= in_end) return false;
    const size_t back = ((ctrl & 0x1f) << 8) + *ip++ + 1;
    len += 2;
    if (back > static_cast<size_t>(op - base) || static_cast<size_t>(out_end - op) < len) {
      return false;
    }
    const uint8_t* ref = op - back;
    for (size_t i = 0; i < len; ++i) *op++ = *ref++;  // may overlap: byte by byte
  }
  return op == out_end;
}

}  // namespace bloomgate
