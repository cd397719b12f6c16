// A journal subscriber for tests: decodes each published record (the log's
// framing is the stream's wire format) and hands it on by type.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "persistence/append_log.h"
#include "server/durability/journal.h"

namespace bloomgate::testing {

class DecodingSubscriber : public JournalSubscriber {
 public:
  bool accepting() const override { return true; }
  void OnRecord(const JournalRecord& record) override {
    EXPECT_GT(record.offset, last_offset_) << "offsets grow with every record";
    last_offset_ = record.offset;
    LogRecord decoded;
    const std::string why = DecodeLogRecord(record.bytes, &decoded);
    ASSERT_EQ(why, "") << "a published record decodes";
    if (decoded.type == LogRecordType::kFilter) {
      OnFilterRecord(decoded.key, decoded.has_payload);
    } else {
      OnCommandRecord(decoded.args);
    }
  }
  virtual void OnCommandRecord(const std::vector<std::string>& args) = 0;
  virtual void OnFilterRecord(const std::string& key, bool has_payload) = 0;

 private:
  uint64_t last_offset_ = 0;  // guarded by the journal's publish lock
};

}  // namespace bloomgate::testing
