// Redis's RDB encoding, the part a RESTORE payload and an RDB file of Redis
// 7.0-7.4 (RDB versions 10-12; 9 is Redis 6.x, read by import-rdb too) are
// made of: length-encoded integers, strings (plain, int-encoded or LZF),
// doubles, and module values. Facts from Redis's rdb.h / rdb.c.
//
// Length (rdbLoadLen), first byte's top two bits:
//   00xxxxxx             6-bit length
//   01xxxxxx yyyyyyyy    14-bit length, big-endian
//   10000000 + 4 bytes   32-bit length, big-endian
//   10000001 + 8 bytes   64-bit length, big-endian
//   11xxxxxx             an encoded string follows: 0 INT8, 1 INT16, 2 INT32
//                        (little-endian, read as their decimal text), 3 LZF
//                        (compressed length, uncompressed length, the bytes)
//
// A module value of RDB_TYPE_MODULE_2 (7): the module id (a 64-bit length:
// 9 characters of 6 bits each from "A-Za-z0-9-_", then 10 bits of encver),
// then values each preceded by its opcode (a length): 1 SINT, 2 UINT (a
// length), 3 FLOAT (4 bytes), 4 DOUBLE (8 bytes, little-endian), 5 STRING;
// then 0 EOF.
//
// RdbReader never reads past its input and latches its first error, which
// names what was being read and where.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace bloomgate {
namespace rdb {

// Value types (rdb.h RDB_TYPE_*).
inline constexpr uint8_t kTypeString = 0;
inline constexpr uint8_t kTypeList = 1;
inline constexpr uint8_t kTypeSet = 2;
inline constexpr uint8_t kTypeZset = 3;
inline constexpr uint8_t kTypeHash = 4;
inline constexpr uint8_t kTypeZset2 = 5;
inline constexpr uint8_t kTypeModulePreGa = 6;
inline constexpr uint8_t kTypeModule2 = 7;
inline constexpr uint8_t kTypeHashZipmap = 9;
inline constexpr uint8_t kTypeListZiplist = 10;
inline constexpr uint8_t kTypeSetIntset = 11;
inline constexpr uint8_t kTypeZsetZiplist = 12;
inline constexpr uint8_t kTypeHashZiplist = 13;
inline constexpr uint8_t kTypeListQuicklist = 14;
inline constexpr uint8_t kTypeStreamListpacks = 15;
inline constexpr uint8_t kTypeHashListpack = 16;
inline constexpr uint8_t kTypeZsetListpack = 17;
inline constexpr uint8_t kTypeListQuicklist2 = 18;
inline constexpr uint8_t kTypeStreamListpacks2 = 19;
inline constexpr uint8_t kTypeSetListpack = 20;
inline constexpr uint8_t kTypeStreamListpacks3 = 21;
// Redis 7.4's hashes with field TTLs.
inline constexpr uint8_t kTypeHashMetadataPreGa = 22;
inline constexpr uint8_t kTypeHashListpackExPreGa = 23;
inline constexpr uint8_t kTypeHashMetadata = 24;
inline constexpr uint8_t kTypeHashListpackEx = 25;

// File opcodes (rdb.h RDB_OPCODE_*).
inline constexpr uint8_t kOpSlotInfo = 244;
inline constexpr uint8_t kOpFunction2 = 245;
inline constexpr uint8_t kOpFunctionPreGa = 246;
inline constexpr uint8_t kOpModuleAux = 247;
inline constexpr uint8_t kOpIdle = 248;
inline constexpr uint8_t kOpFreq = 249;
inline constexpr uint8_t kOpAux = 250;
inline constexpr uint8_t kOpResizeDb = 251;
inline constexpr uint8_t kOpExpireTimeMs = 252;
inline constexpr uint8_t kOpExpireTime = 253;
inline constexpr uint8_t kOpSelectDb = 254;
inline constexpr uint8_t kOpEof = 255;

// Module value opcodes (RDB_MODULE_OPCODE_*).
inline constexpr uint64_t kModuleEof = 0;
inline constexpr uint64_t kModuleSint = 1;
inline constexpr uint64_t kModuleUint = 2;
inline constexpr uint64_t kModuleFloat = 3;
inline constexpr uint64_t kModuleDouble = 4;
inline constexpr uint64_t kModuleString = 5;

// A module type's 9-character name and encoding version from its id; false
// when the id holds no valid name. EncodeModuleId is its inverse (0 for a
// name that is not 9 characters of the set, or encver > 1023).
bool DecodeModuleId(uint64_t id, std::string* name, uint32_t* encver);
uint64_t EncodeModuleId(std::string_view name, uint32_t encver);

// The name Redis gives an RDB value type in messages ("string", "hash",
// "module"), or "type N".
std::string TypeName(uint8_t type);

class RdbReader {
 public:
  explicit RdbReader(std::string_view in) : in_(in) {}

  bool Byte(uint8_t* out);
  bool Raw(uint64_t n, std::string_view* out);
  bool Length(uint64_t* out, bool* encoded = nullptr);
  // A string of at most max_len bytes (after decompression): *out views
  // the input when stored plain, else *scratch.
  bool String(uint64_t max_len, std::string_view* out, std::string* scratch);
  // Steps over a string without decompressing it.
  bool SkipString();
  // rdbLoadDoubleValue (RDB_TYPE_ZSET's text doubles): steps over one.
  bool SkipTextDouble();
  bool BinaryDouble(double* out);
  bool Float(float* out);
  bool Millis(int64_t* out);   // 8 bytes, little-endian
  bool Seconds(int32_t* out);  // 4 bytes, little-endian

  // Module values (RDB_TYPE_MODULE_2), each checked for its opcode.
  bool ModuleUnsigned(uint64_t* out);
  bool ModuleDouble(double* out);
  bool ModuleString(uint64_t max_len, std::string_view* out, std::string* scratch);
  bool ModuleEof();
  // Steps over module values up to and including EOF (a module we do not
  // read, or the value of a type we skip).
  bool SkipModuleValues();

  bool failed() const { return failed_; }
  // Whether the error is a string longer than its caller's max_len: the
  // value is too large for the limits, not damaged.
  bool over_limit() const { return over_limit_; }
  const std::string& error() const { return error_; }
  uint64_t offset() const { return pos_; }
  bool at_end() const { return pos_ == in_.size(); }
  uint64_t remaining() const { return in_.size() - pos_; }
  // Goes back to an earlier offset and clears the error: a value whose
  // decode was refused is stepped over again with the skipping reads.
  void Rewind(uint64_t offset) {
    pos_ = offset <= in_.size() ? offset : in_.size();
    failed_ = false;
    over_limit_ = false;
    error_.clear();
  }
  // Latches `why` (with the offset) unless an error is latched already.
  bool Fail(const std::string& why);

 private:
  bool ModuleOpcode(uint64_t expected, const char* what);

  std::string_view in_;
  uint64_t pos_ = 0;
  bool failed_ = false;
  bool over_limit_ = false;
  std::string error_;
};

}  // namespace rdb
}  // namespace bloomgate
