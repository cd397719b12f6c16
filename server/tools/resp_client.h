// A small blocking RESP2 client for the tools that talk to a running server
// (bloomgate migrate): connect with a deadline, AUTH, send commands
// (pipelined: queue several, flush once, read the replies in order) and read
// replies, every step within a timeout. Errors are values: a false return
// and a sentence naming the endpoint and the step.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace bloomgate {

struct RespValue {
  enum class Type { kSimple, kError, kInteger, kBulk, kNull, kArray };
  Type type = Type::kNull;
  std::string text;  // simple string, error, bulk
  int64_t integer = 0;
  std::vector<RespValue> elements;

  bool is_error() const { return type == Type::kError; }
  // The reply as one line for messages: "OK", "(error) ERR x", "(integer) 3".
  std::string Describe() const;
};

// "HOST:PORT" (a bare "HOST" takes 6379, Redis's port).
bool ParseEndpoint(std::string_view text, std::string* host, uint16_t* port,
                   std::string* error);

class RespClient {
 public:
  RespClient();
  ~RespClient();
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;

  // Connects within `timeout`; every later read or write gets `timeout` too.
  bool Connect(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
               std::string* error);
  // AUTH password, or AUTH user password when `user` is not empty. A refused
  // AUTH is an error naming what the server said.
  bool Auth(const std::string& user, const std::string& password, std::string* error);

  // Queues one command (nothing is sent until Flush or Call).
  void Send(const std::vector<std::string_view>& argv);
  bool Flush(std::string* error);
  // The next reply. A RESP error reply is a successful read (is_error()).
  bool Read(RespValue* reply, std::string* error);
  // Send + Flush + Read.
  bool Call(const std::vector<std::string_view>& argv, RespValue* reply, std::string* error);

  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
};

}  // namespace bloomgate
