#include "server/stats/error_stats.h"

namespace bloomgate {

void ErrorStats::OnErrorReply(std::string_view line) {
  std::string_view code = line.substr(0, line.find(' '));
  std::lock_guard lock(mutex_);
  auto it = counts_.find(code);
  if (it != counts_.end()) {
    ++it->second;
  } else if (counts_.size() < kMaxCodes) {
    counts_.emplace(std::string(code), 1);
  }
}

std::vector<std::pair<std::string, uint64_t>> ErrorStats::Counts() const {
  std::lock_guard lock(mutex_);
  return {counts_.begin(), counts_.end()};
}

void ErrorStats::Reset() {
  std::lock_guard lock(mutex_);
  counts_.clear();
}

}  // namespace bloomgate
