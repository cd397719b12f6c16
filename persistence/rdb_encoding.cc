#include "persistence/rdb_encoding.h"

#include <bit>
#include <cstring>

#include "persistence/lzf.h"

namespace bloomgate {
namespace rdb {
namespace {

// Redis's ModuleTypeNameCharSet: a name character's 6-bit code is its index.
constexpr std::string_view kNameCharset =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr int kNameLength = 9;

uint64_t LittleEndian(std::string_view bytes) {
  uint64_t v = 0;
  for (size_t i = bytes.size(); i-- > 0;) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
  return v;
}

}  // namespace

bool DecodeModuleId(uint64_t id, std::string* name, uint32_t* encver) {
  *encver = static_cast<uint32_t>(id & 1023);
  uint64_t rest = id >> 10;
  std::string out(kNameLength, ' ');
  for (int i = kNameLength - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = kNameCharset[rest & 63];
    rest >>= 6;
  }
  *name = std::move(out);
  return true;  // 9 x 6 + 10 = 64 bits: every id spells a name
}

uint64_t EncodeModuleId(std::string_view name, uint32_t encver) {
  if (name.size() != kNameLength || encver > 1023) return 0;
  uint64_t id = 0;
  for (const char c : name) {
    const size_t at = kNameCharset.find(c);
    if (at == std::string_view::npos) return 0;
    id = (id << 6) | at;
  }
  return (id << 10) | encver;
}

std::string TypeName(uint8_t type) {
  switch (type) {
    case kTypeString: return "string";
    case kTypeList: case kTypeListZiplist: case kTypeListQuicklist: case kTypeListQuicklist2:
      return "list";
    case kTypeSet: case kTypeSetIntset: case kTypeSetListpack: return "set";
    case kTypeZset: case kTypeZset2: case kTypeZsetZiplist: case kTypeZsetListpack: return "zset";
    case kTypeHash: case kTypeHashZipmap: case kTypeHashZiplist: case kTypeHashListpack:
    case kTypeHashMetadataPreGa: case kTypeHashListpackExPreGa: case kTypeHashMetadata:
    case kTypeHashListpackEx:
      return "hash";
    case kTypeStreamListpacks: case kTypeStreamListpacks2: case kTypeStreamListpacks3:
      return "stream";
    case kTypeModulePreGa: case kTypeModule2: return "module";
    default: return "type " + std::to_string(type);
  }
}

bool RdbReader::Fail(const std::string& why) {
  if (!failed_) {
    failed_ = true;
    error_ = why + " at byte " + std::to_string(pos_);
  }
  return false;
}

bool RdbReader::Raw(uint64_t n, std::string_view* out) {
  if (failed_) return false;
  if (n > in_.size() - pos_) {
    return Fail("truncated: " + std::to_string(n) + " bytes needed, " +
                std::to_string(in_.size() - pos_) + " left");
  }
  *out = in_.substr(pos_, n);
  pos_ += n;
  return true;
}

bool RdbReader::Byte(uint8_t* out) {
  std::string_view b;
  if (!Raw(1, &b)) return false;
  *out = static_cast<uint8_t>(b[0]);
  return true;
}

bool RdbReader::Length(uint64_t* out, bool* encoded) {
  uint8_t first = 0;
  if (!Byte(&first)) return false;
  if (encoded != nullptr) *encoded = false;
  std::string_view b;
  switch (first >> 6) {
    case 0: *out = first & 0x3f; return true;
    case 1:
      if (!Raw(1, &b)) return false;
      *out = (uint64_t{first & 0x3fu} << 8) | static_cast<uint8_t>(b[0]);
      return true;
    case 2: {
      const uint64_t bytes = first == 0x80 ? 4 : first == 0x81 ? 8 : 0;
      if (bytes == 0) return Fail("unknown length prefix " + std::to_string(first));
      if (!Raw(bytes, &b)) return false;
      uint64_t v = 0;
      for (const char c : b) v = (v << 8) | static_cast<uint8_t>(c);
      *out = v;
      return true;
    }
    default:
      if (encoded == nullptr) return Fail("an encoded string where a length belongs");
      *encoded = true;
      *out = first & 0x3f;
      return true;
  }
}

bool RdbReader::String(uint64_t max_len, std::string_view* out, std::string* scratch) {
  bool encoded = false;
  uint64_t len = 0;
  if (!Length(&len, &encoded)) return false;
  if (!encoded) {
    if (len > max_len) {
      over_limit_ = !failed_;
      return Fail("a string of " + std::to_string(len) + " bytes (at most " +
                  std::to_string(max_len) + " here)");
    }
    return Raw(len, out);
  }
  std::string_view b;
  switch (len) {
    case 0: case 1: case 2: {
      const uint64_t width = uint64_t{1} << len;  // 1, 2, 4 bytes
      if (!Raw(width, &b)) return false;
      const uint64_t raw = LittleEndian(b);
      const int64_t value = width == 1   ? static_cast<int8_t>(raw)
                            : width == 2 ? static_cast<int16_t>(raw)
                                         : static_cast<int32_t>(raw);
      *scratch = std::to_string(value);
      if (scratch->size() > max_len) return Fail("an integer string longer than allowed here");
      *out = *scratch;
      return true;
    }
    case 3: {
      uint64_t clen = 0, ulen = 0;
      if (!Length(&clen) || !Length(&ulen)) return false;
      if (ulen > max_len) {
        over_limit_ = !failed_;
        return Fail("a compressed string of " + std::to_string(ulen) + " bytes (at most " +
                    std::to_string(max_len) + " here)");
      }
      if (!Raw(clen, &b)) return false;
      if (ulen > clen * kLzfMaxExpansion || !LzfDecompress(b, ulen, scratch)) {
        return Fail("damaged LZF string");
      }
      *out = *scratch;
      return true;
    }
    default: return Fail("unknown string encoding " + std::to_string(len));
  }
}

bool RdbReader::SkipString() {
  bool encoded = false;
  uint64_t len = 0;
  if (!Length(&len, &encoded)) return false;
  std::string_view b;
  if (!encoded) return Raw(len, &b);
  switch (len) {
    case 0: case 1: case 2: return Raw(uint64_t{1} << len, &b);
    case 3: {
      uint64_t clen = 0, ulen = 0;
      return Length(&clen) && Length(&ulen) && Raw(clen, &b);
    }
    default: return Fail("unknown string encoding " + std::to_string(len));
  }
}

bool RdbReader::SkipTextDouble() {
  uint8_t len = 0;
  if (!Byte(&len)) return false;
  if (len >= 253) return true;  // nan, +inf, -inf
  std::string_view b;
  return Raw(len, &b);
}

bool RdbReader::BinaryDouble(double* out) {
  std::string_view b;
  if (!Raw(8, &b)) return false;
  *out = std::bit_cast<double>(LittleEndian(b));
  return true;
}

bool RdbReader::Float(float* out) {
  std::string_view b;
  if (!Raw(4, &b)) return false;
  *out = std::bit_cast<float>(static_cast<uint32_t>(LittleEndian(b)));
  return true;
}

bool RdbReader::Millis(int64_t* out) {
  std::string_view b;
  if (!Raw(8, &b)) return false;
  *out = static_cast<int64_t>(LittleEndian(b));
  return true;
}

bool RdbReader::Seconds(int32_t* out) {
  std::string_view b;
  if (!Raw(4, &b)) return false;
  *out = static_cast<int32_t>(static_cast<uint32_t>(LittleEndian(b)));
  return true;
}

bool RdbReader::ModuleOpcode(uint64_t expected, const char* what) {
  uint64_t opcode = 0;
  if (!Length(&opcode)) return false;
  if (opcode != expected) {
    return Fail(std::string("module value opcode ") + std::to_string(opcode) + " where " + what +
                " (" + std::to_string(expected) + ") belongs");
  }
  return true;
}

bool RdbReader::ModuleUnsigned(uint64_t* out) {
  return ModuleOpcode(kModuleUint, "an unsigned") && Length(out);
}

bool RdbReader::ModuleDouble(double* out) {
  return ModuleOpcode(kModuleDouble, "a double") && BinaryDouble(out);
}

bool RdbReader::ModuleString(uint64_t max_len, std::string_view* out, std::string* scratch) {
  return ModuleOpcode(kModuleString, "a string") && String(max_len, out, scratch);
}

bool RdbReader::ModuleEof() { return ModuleOpcode(kModuleEof, "the value's end"); }

bool RdbReader::SkipModuleValues() {
  for (;;) {
    uint64_t opcode = 0;
    if (!Length(&opcode)) return false;
    uint64_t v = 0;
    std::string_view b;
    switch (opcode) {
      case kModuleEof: return true;
      case kModuleSint: case kModuleUint:
        if (!Length(&v)) return false;
        break;
      case kModuleFloat:
        if (!Raw(4, &b)) return false;
        break;
      case kModuleDouble:
        if (!Raw(8, &b)) return false;
        break;
      case kModuleString:
        if (!SkipString()) return false;
        break;
      default: return Fail("unknown module value opcode " + std::to_string(opcode));
    }
  }
}

}  // namespace rdb
}  // namespace bloomgate
