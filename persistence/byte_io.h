// Explicit little-endian encoding for every persistent byte: snapshots, the
// append-only log and SCANDUMP chunks. Integers are written byte by byte
// (never a packed struct, never native order), doubles as the little-endian
// bytes of their IEEE-754 bit pattern.
//
// ByteReader never reads past its input: every Get* returns false once the
// input is short, and stays failed (a latched error, so a decoder can read a
// whole header and check once).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace bloomgate {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

  void PutU8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void PutU16(uint16_t v) { PutLittleEndian(v, 2); }
  void PutU32(uint32_t v) { PutLittleEndian(v, 4); }
  void PutU64(uint64_t v) { PutLittleEndian(v, 8); }
  void PutI64(int64_t v) { PutU64(static_cast<uint64_t>(v)); }
  void PutF64(double v) { PutU64(std::bit_cast<uint64_t>(v)); }
  void PutBytes(std::string_view bytes) { out_->append(bytes); }
  // u32 length, then the bytes.
  void PutString(std::string_view bytes) {
    PutU32(static_cast<uint32_t>(bytes.size()));
    PutBytes(bytes);
  }
  size_t size() const { return out_->size(); }

 private:
  void PutLittleEndian(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string* out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}

  bool GetU8(uint8_t* v) {
    uint64_t x = 0;
    if (!GetLittleEndian(&x, 1)) return false;
    *v = static_cast<uint8_t>(x);
    return true;
  }
  bool GetU16(uint16_t* v) {
    uint64_t x = 0;
    if (!GetLittleEndian(&x, 2)) return false;
    *v = static_cast<uint16_t>(x);
    return true;
  }
  bool GetU32(uint32_t* v) {
    uint64_t x = 0;
    if (!GetLittleEndian(&x, 4)) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool GetU64(uint64_t* v) { return GetLittleEndian(v, 8); }
  bool GetI64(int64_t* v) {
    uint64_t x = 0;
    if (!GetU64(&x)) return false;
    *v = static_cast<int64_t>(x);
    return true;
  }
  bool GetF64(double* v) {
    uint64_t x = 0;
    if (!GetU64(&x)) return false;
    *v = std::bit_cast<double>(x);
    return true;
  }
  // Exactly `n` bytes, viewed in place.
  bool GetBytes(size_t n, std::string_view* v) {
    if (failed_ || in_.size() - pos_ < n) return Fail();
    *v = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  // u32 length, then that many bytes; refuses a length beyond the input
  // (never allocates from a declared size).
  bool GetString(std::string_view* v) {
    uint32_t n = 0;
    return GetU32(&n) && GetBytes(n, v);
  }

  bool failed() const { return failed_; }
  size_t position() const { return pos_; }
  size_t remaining() const { return failed_ ? 0 : in_.size() - pos_; }

 private:
  bool Fail() {
    failed_ = true;
    return false;
  }
  bool GetLittleEndian(uint64_t* v, int bytes) {
    if (failed_ || in_.size() - pos_ < static_cast<size_t>(bytes)) return Fail();
    uint64_t x = 0;
    for (int i = 0; i < bytes; ++i) {
      x |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    }
    pos_ += bytes;
    *v = x;
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

}  // namespace bloomgate
