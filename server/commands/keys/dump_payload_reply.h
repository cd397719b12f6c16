// The reply to a DUMP payload refused (RESTORE, RESTORE-CHUNK): Redis's
// texts for what persistence/dump_payload.h tells apart.
#pragma once

#include <string_view>

#include "persistence/dump_payload.h"
#include "server/commands/errors.h"

namespace bloomgate {

inline std::string_view DumpPayloadErrorText(DumpPayloadError error) {
  switch (error) {
    case DumpPayloadError::kNone: break;
    case DumpPayloadError::kVersionOrChecksum: return errors::kDumpPayloadWrong;
    case DumpPayloadError::kBadData: break;
    case DumpPayloadError::kOutOfMemory: return errors::kOom;
    case DumpPayloadError::kFilterTooLarge: return errors::kInsufficientMemory;
  }
  return errors::kBadDataFormat;
}

}  // namespace bloomgate
