// RESP2 / RESP3 reply encoding into a connection's output buffer.
//
// Handlers never format RESP by hand: they call these methods, and the
// builder picks the wire form from the client's protocol version (HELLO 3
// switches a connection to RESP3). Where RESP2 has no type of its own the
// builder falls back the way Redis does: a map is a flat array of 2n
// elements, a boolean is :1/:0, a double is a bulk string, a null is $-1.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

// Told of every error reply a builder writes (INFO errorstats counts them by
// code); `line` is the error's text without the '-'.
class ReplyErrorObserver {
 public:
  virtual void OnErrorReply(std::string_view line) = 0;

 protected:
  ~ReplyErrorObserver() = default;
};

class ReplyBuilder {
 public:
  explicit ReplyBuilder(std::string* out) : out_(out) {}

  void set_resp3(bool resp3) { resp3_ = resp3; }
  bool resp3() const { return resp3_; }
  std::string* buffer() { return out_; }
  // How many error replies this builder has written (INFO's
  // total_error_replies).
  uint64_t errors_written() const { return errors_written_; }
  void set_error_observer(ReplyErrorObserver* observer) { error_observer_ = observer; }

  void SimpleString(std::string_view text);
  void Ok() { SimpleString("OK"); }
  // `text` is the whole error line without the leading '-' (see errors.h);
  // CR and LF are replaced with spaces so user text can never break framing.
  void Error(std::string_view text);
  // Redis's rule for formatted messages: text that does not start with an
  // error code gets "ERR ".
  void ErrorWithErrPrefix(std::string_view message);
  void Integer(int64_t value);
  void Bulk(std::string_view data);
  void Null();       // $-1 / _
  void NullArray();  // *-1 / _
  void Bool(bool value);
  // Bool of each value, in order: a batch's answers (BF.MADD's, CBF.MADD's)
  // written with one resize of the buffer rather than an append apiece.
  void Bools(const std::vector<bool>& values);
  void Double(double value);
  void ArrayHeader(size_t count);
  // An out-of-band message (pub/sub): RESP3's push type '>', RESP2's array.
  void PushHeader(size_t count);
  void MapHeader(size_t pairs);
  void SetHeader(size_t count);
  // INFO-style text: RESP3 verbatim string "=len\r\ntxt:...", RESP2 bulk.
  void Verbatim(std::string_view text);

 private:
  void Header(char type, int64_t value);

  std::string* out_;
  bool resp3_ = false;
  uint64_t errors_written_ = 0;
  ReplyErrorObserver* error_observer_ = nullptr;
};

}  // namespace bloomgate
