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
// makes the loss permanent. The memory limits are local too (maxmemory,
// max-filter-memory: a replica's may be lower than its primary's, an
// operator may lower them before a restart), so a replay applies the growth
// it records past them (AsRecordedScope). Bounds that keep the process safe
// (sizes no integer holds, a failed allocation, the kick budget whose
// spending a record replays exactly) are not admission and apply to both.
enum class Admission : uint8_t {
  kClient,      // a client's command: every rule of this build
  kAsRecorded,  // a journal replay: apply what was acknowledged
};

// While one lives on a thread, the memory limits do not refuse what that
// thread creates or grows: MemoryBudget reserves past its limit (never past
// 2^64) and the per-filter cap is not checked (LimitsJudge). The filters
// keep their configured limits for the client writes that come after.
// A thread-local because the limits are checked deep in every filter's
// growth path, which knows no origin; a replay runs its records inline on
// one thread (it never parks), so the scope covers exactly its writes.
class AsRecordedScope {
 public:
  AsRecordedScope() { ++depth_; }
  ~AsRecordedScope() { --depth_; }
  AsRecordedScope(const AsRecordedScope&) = delete;
  AsRecordedScope& operator=(const AsRecordedScope&) = delete;

  // Whether the calling thread applies recorded writes now.
  static bool active() { return depth_ > 0; }

 private:
  static inline thread_local int depth_ = 0;
};

// Whether the memory limits judge the calling thread's writes now.
inline bool LimitsJudge() { return !AsRecordedScope::active(); }

}  // namespace bloomgate
