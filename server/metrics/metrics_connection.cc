#include "server/metrics/metrics_connection.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/base/clock.h"
#include "server/base/log_limiter.h"
#include "server/metrics/metrics_access.h"
#include "server/metrics/metrics_collector.h"

namespace bloomgate {
namespace {

// One line a second at most: a scraper with a wrong password tries again
// on every scrape.
LogLimiter refused_log(/*interval_ms=*/1000);

std::string_view Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
  }
}

std::string Response(int status, std::string_view content_type, std::string_view extra_headers,
                     std::string_view body, bool head_only = false) {
  std::string text = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
      status, Reason(status), content_type, body.size(), extra_headers);
  if (!head_only) text += body;
  return text;
}

}  // namespace

std::string HttpErrorResponse(int status, std::string_view extra_headers) {
  return Response(status, "text/plain; charset=utf-8", extra_headers,
                  fmt::format("{} {}\n", status, Reason(status)));
}

std::string MetricsResponse(ServerContext& server, MetricsCollector& collector,
                            const tcp::endpoint& peer, const HttpRequest& request,
                            int64_t now_ms) {
  if (HttpPath(request.target) != "/metrics") return HttpErrorResponse(404);
  const bool head = request.method == "HEAD";
  if (request.method != "GET" && !head) return HttpErrorResponse(405, "Allow: GET, HEAD\r\n");
  const MetricsAccess access = DecideMetricsAccess(server, peer, request.authorization, now_ms);
  if (access != MetricsAccess::kAllowed) {
    uint64_t suppressed = 0;
    if (access != MetricsAccess::kNeedsAuth && access != MetricsAccess::kProtectedMode &&
        refused_log.Allow(now_ms, &suppressed)) {
      spdlog::warn("metrics: refused a scrape from {}: {} ({} similar suppressed)",
                   peer.address().to_string(), ToString(access), suppressed);
    }
    switch (access) {
      case MetricsAccess::kNeedsAuth:
      case MetricsAccess::kWrongCredentials:
        return HttpErrorResponse(401, "WWW-Authenticate: Basic realm=\"bloomgate\"\r\n");
      case MetricsAccess::kThrottled: return HttpErrorResponse(429, "Retry-After: 1\r\n");
      default: return HttpErrorResponse(403);
    }
  }
  const std::string page = collector.Collect(now_ms);
  return Response(200, "text/plain; version=0.0.4; charset=utf-8", {}, page, head);
}

MetricsConnection::MetricsConnection(tcp::socket socket, ServerContext& server,
                                     MetricsCollector& collector,
                                     std::function<void(MetricsConnection*)> on_close)
    : socket_(std::move(socket)),
      server_(server),
      collector_(collector),
      on_close_(std::move(on_close)),
      deadline_(socket_.get_executor()) {}

void MetricsConnection::Start() {
  boost::system::error_code ec;
  peer_ = socket_.remote_endpoint(ec);
  if (ec) {
    Close();
    return;
  }
  deadline_.expires_after(std::chrono::milliseconds(kReadDeadlineMs));
  deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error) self->Close();  // no full request in time
  });
  DoRead();
}

void MetricsConnection::Stop() { Close(); }

void MetricsConnection::DoRead() {
  socket_.async_read_some(
      asio::buffer(chunk_),
      [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
        if (ec || self->closed_) {
          self->Close();
          return;
        }
        self->input_.append(self->chunk_.data(), n);
        HttpRequest request;
        switch (ParseHttpRequest(self->input_, &request)) {
          case HttpParse::kNeedMore:
            self->DoRead();
            return;
          case HttpParse::kBad:
            self->output_ = HttpErrorResponse(400);
            break;
          case HttpParse::kTooLarge:
            self->output_ = HttpErrorResponse(431);
            break;
          case HttpParse::kGood:
            self->output_ = MetricsResponse(self->server_, self->collector_, self->peer_,
                                            request, NowMs());
            break;
        }
        self->deadline_.cancel();
        self->DoWrite();
      });
}

void MetricsConnection::DoWrite() {
  asio::async_write(socket_, asio::buffer(output_),
                    [self = shared_from_this()](const boost::system::error_code&, size_t) {
                      boost::system::error_code ignored;
                      self->socket_.shutdown(tcp::socket::shutdown_both, ignored);
                      self->Close();
                    });
}

void MetricsConnection::Close() {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ignored;
  deadline_.cancel();
  socket_.close(ignored);
  if (on_close_) on_close_(this);
}

}  // namespace bloomgate
