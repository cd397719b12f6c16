// INFO errorstats: how many error replies carried each error code (the
// reply's first word: ERR, WRONGTYPE, NOAUTH...), as Redis counts them. Like
// Redis (ERROR_STATS_NUMBER) it tracks at most 128 distinct codes, so a
// client sending odd errors cannot grow it without bound; later new codes
// are counted only in total_error_replies.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/resp/reply_builder.h"

namespace bloomgate {

class ErrorStats : public ReplyErrorObserver {
 public:
  static constexpr size_t kMaxCodes = 128;

  // Counts one error reply; `line` is its text without the '-'.
  void OnErrorReply(std::string_view line) override;
  // (code, count), by code.
  std::vector<std::pair<std::string, uint64_t>> Counts() const;
  void Reset();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t, std::less<>> counts_;
};

}  // namespace bloomgate
