// The wall clock every deadline is measured against: Unix time in
// milliseconds, as Redis's PEXPIREAT and the snapshot and log records use.
#pragma once

#include <chrono>
#include <cstdint>

namespace bloomgate {

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace bloomgate
