#include "server/tools/resp_client.h"

#include <charconv>
#include <optional>

#include "server/net/asio.h"

namespace bloomgate {
namespace {

// Redis's proto-max-bulk-len default (512 MB): no reply a server may send is
// longer, so a larger claim is a broken stream, never an allocation.
constexpr int64_t kMaxBulkBytes = int64_t{512} << 20;
// Array nesting a reply may use (SCANDUMP: 2; MODULE LIST: 3).
constexpr int kMaxDepth = 16;
// One read_some: 256 KiB, so a 16 MiB SCANDUMP chunk takes 64 reads.
constexpr size_t kReadBytes = 256 << 10;

enum class Parse { kDone, kNeedMore, kBad };

// Finds "\r\n" from `pos`; npos if the line is not complete yet.
size_t LineEnd(const std::string& in, size_t pos) { return in.find("\r\n", pos); }

bool ParseInt(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// Parses one reply at `*pos` without copying anything until it is complete:
// a 16 MiB bulk read in 64 pieces is looked at 64 times, copied once.
Parse ParseReply(const std::string& in, size_t* pos, int depth, RespValue* out) {
  if (depth > kMaxDepth) return Parse::kBad;
  if (*pos >= in.size()) return Parse::kNeedMore;
  size_t end = LineEnd(in, *pos + 1);
  if (end == std::string::npos) return Parse::kNeedMore;
  char type = in[*pos];
  std::string_view line(in.data() + *pos + 1, end - *pos - 1);
  size_t after = end + 2;
  switch (type) {
    case '+':
    case '-':
      out->type = type == '+' ? RespValue::Type::kSimple : RespValue::Type::kError;
      out->text = std::string(line);
      *pos = after;
      return Parse::kDone;
    case ':':
      out->type = RespValue::Type::kInteger;
      if (!ParseInt(line, &out->integer)) return Parse::kBad;
      *pos = after;
      return Parse::kDone;
    case '$': {
      int64_t length = 0;
      if (!ParseInt(line, &length) || length < -1 || length > kMaxBulkBytes) return Parse::kBad;
      if (length == -1) {
        out->type = RespValue::Type::kNull;
        *pos = after;
        return Parse::kDone;
      }
      if (in.size() < after + static_cast<size_t>(length) + 2) return Parse::kNeedMore;
      out->type = RespValue::Type::kBulk;
      out->text.assign(in, after, static_cast<size_t>(length));
      *pos = after + static_cast<size_t>(length) + 2;
      return Parse::kDone;
    }
    case '*': {
      int64_t count = 0;
      if (!ParseInt(line, &count) || count < -1 || count > (int64_t{1} << 20)) return Parse::kBad;
      if (count == -1) {
        out->type = RespValue::Type::kNull;
        *pos = after;
        return Parse::kDone;
      }
      out->type = RespValue::Type::kArray;
      out->elements.clear();
      size_t cursor = after;
      for (int64_t i = 0; i < count; ++i) {
        RespValue element;
        Parse result = ParseReply(in, &cursor, depth + 1, &element);
        if (result != Parse::kDone) return result;
        out->elements.push_back(std::move(element));
      }
      *pos = cursor;
      return Parse::kDone;
    }
    default:
      return Parse::kBad;
  }
}

}  // namespace

std::string RespValue::Describe() const {
  switch (type) {
    case Type::kSimple:
    case Type::kBulk:
      return text;
    case Type::kError:
      return "(error) " + text;
    case Type::kInteger:
      return "(integer) " + std::to_string(integer);
    case Type::kNull:
      return "(nil)";
    case Type::kArray:
      return "(array of " + std::to_string(elements.size()) + ")";
  }
  return "";
}

bool ParseEndpoint(std::string_view text, std::string* host, uint16_t* port,
                   std::string* error) {
  size_t colon = text.rfind(':');
  std::string_view host_part = colon == std::string_view::npos ? text : text.substr(0, colon);
  *port = 6379;
  if (colon != std::string_view::npos) {
    std::string_view port_part = text.substr(colon + 1);
    int64_t value = 0;
    if (!ParseInt(port_part, &value) || value < 1 || value > 65535) {
      *error = "bad port in '" + std::string(text) + "' (want HOST:PORT)";
      return false;
    }
    *port = static_cast<uint16_t>(value);
  }
  if (host_part.empty()) {
    *error = "no host in '" + std::string(text) + "' (want HOST:PORT)";
    return false;
  }
  *host = std::string(host_part);
  return true;
}

struct RespClient::Impl {
  asio::io_context io;
  tcp::socket socket{io};
  std::chrono::milliseconds timeout{30000};
  std::string out;
  std::string in;
  size_t in_pos = 0;  // parsed up to here

  // Runs the queued operation; false (and the socket closed) if it did not
  // finish within the timeout.
  bool RunWithDeadline() {
    io.restart();
    io.run_for(timeout);
    if (io.stopped()) return true;
    boost::system::error_code ignored;
    socket.close(ignored);  // cancels the operation; its handler runs below
    io.restart();
    io.run();
    return false;
  }
};

RespClient::RespClient() : impl_(std::make_unique<Impl>()) {}
RespClient::~RespClient() = default;

bool RespClient::Connect(const std::string& host, uint16_t port,
                         std::chrono::milliseconds timeout, std::string* error) {
  endpoint_ = host + ":" + std::to_string(port);
  impl_->timeout = timeout;
  boost::system::error_code ec;
  tcp::resolver resolver(impl_->io);
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) {
    *error = endpoint_ + ": cannot resolve " + host + ": " + ec.message();
    return false;
  }
  boost::system::error_code result = asio::error::timed_out;
  asio::async_connect(impl_->socket, endpoints,
                      [&result](const boost::system::error_code& e, const tcp::endpoint&) {
                        result = e;
                      });
  if (!impl_->RunWithDeadline()) result = asio::error::timed_out;
  if (result) {
    *error = endpoint_ + ": cannot connect: " + result.message();
    return false;
  }
  impl_->socket.set_option(tcp::no_delay(true), ec);
  return true;
}

bool RespClient::Auth(const std::string& user, const std::string& password,
                      std::string* error) {
  RespValue reply;
  std::vector<std::string_view> argv = {"AUTH"};
  if (!user.empty()) argv.push_back(user);
  argv.push_back(password);
  if (!Call(argv, &reply, error)) return false;
  if (reply.is_error()) {
    *error = endpoint_ + ": authentication failed: " + reply.text;
    return false;
  }
  return true;
}

void RespClient::Send(const std::vector<std::string_view>& argv) {
  std::string& out = impl_->out;
  out += "*" + std::to_string(argv.size()) + "\r\n";
  for (std::string_view arg : argv) {
    out += "$" + std::to_string(arg.size()) + "\r\n";
    out.append(arg);
    out += "\r\n";
  }
}

bool RespClient::Flush(std::string* error) {
  if (impl_->out.empty()) return true;
  boost::system::error_code result = asio::error::timed_out;
  asio::async_write(impl_->socket, asio::buffer(impl_->out),
                    [&result](const boost::system::error_code& e, size_t) { result = e; });
  if (!impl_->RunWithDeadline()) result = asio::error::timed_out;
  impl_->out.clear();
  if (result) {
    *error = endpoint_ + ": write failed: " + result.message();
    return false;
  }
  return true;
}

bool RespClient::Read(RespValue* reply, std::string* error) {
  std::string& in = impl_->in;
  std::string piece(kReadBytes, '\0');
  while (true) {
    size_t pos = impl_->in_pos;
    Parse result = ParseReply(in, &pos, 0, reply);
    if (result == Parse::kDone) {
      impl_->in_pos = pos;
      // Drop what was read once it is most of the buffer: no quadratic
      // erase for a pipeline of small replies, no unbounded growth either.
      if (impl_->in_pos == in.size() || impl_->in_pos > (1u << 20)) {
        in.erase(0, impl_->in_pos);
        impl_->in_pos = 0;
      }
      return true;
    }
    if (result == Parse::kBad) {
      *error = endpoint_ + ": the reply is not RESP2";
      return false;
    }
    boost::system::error_code read_result = asio::error::timed_out;
    size_t got = 0;
    impl_->socket.async_read_some(asio::buffer(piece),
                                  [&](const boost::system::error_code& e, size_t n) {
                                    read_result = e;
                                    got = n;
                                  });
    if (!impl_->RunWithDeadline()) read_result = asio::error::timed_out;
    if (read_result) {
      *error = endpoint_ + ": read failed: " +
               (read_result == asio::error::eof ? std::string("connection closed by the server")
                                                : read_result.message());
      return false;
    }
    in.append(piece.data(), got);
  }
}

bool RespClient::Call(const std::vector<std::string_view>& argv, RespValue* reply,
                      std::string* error) {
  Send(argv);
  return Flush(error) && Read(reply, error);
}

}  // namespace bloomgate
