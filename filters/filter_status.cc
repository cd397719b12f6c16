#include "filters/filter_status.h"

namespace bloomgate {

const char* ToString(FilterStatus status) {
  switch (status) {
    case FilterStatus::kOk:
      return "ok";
    case FilterStatus::kFull:
      return "full";
    case FilterStatus::kFilterMemoryLimit:
      return "filter memory limit";
    case FilterStatus::kOutOfMemory:
      return "out of memory";
    case FilterStatus::kTooManyLayers:
      return "too many layers";
    case FilterStatus::kInvalidOptions:
      return "invalid options";
    case FilterStatus::kMaxExpansions:
      return "maximum expansions reached";
    case FilterStatus::kCopiesFull:
      return "copies fill both buckets";
    case FilterStatus::kErrorRateUnderflow:
      return "error rate underflow";
  }
  return "unknown filter status";
}

}  // namespace bloomgate
