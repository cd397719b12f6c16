#pragma once

#include <cstdint>

namespace bloomgate {

// Who asks a filter to take a write, and so which rules judge it.
//
// A rule that refuses a write for policy (how a filter should be used), not
// for safety, binds clients only. A record replayed from the log was
// acknowledged by whichever build wrote it, under that build's rules: a log
// an older build wrote may hold writes that a rule added since refuses
// (20 CF.ADD of one item: today's copies rule refuses the 9th). Judging them
// again at start-up loses acknowledged writes, and the snapshot taken next
// makes the loss permanent. Bounds that keep the process safe (sizes no
// integer holds, the memory caps, the kick budget whose spending a record
// replays exactly) are not admission and apply to both.
enum class Admission : uint8_t {
  kClient,      // a client's command: every rule of this build
  kAsRecorded,  // a journal replay: apply what was acknowledged
};

}  // namespace bloomgate
