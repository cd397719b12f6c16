#include "server/metrics/http_request_parser.h"

#include <cctype>

namespace bloomgate {
namespace {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 9110's tchar: what a method and a field name may be made of.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) == 0 && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// One line without its end; lines end in CRLF, a bare LF is accepted
// (RFC 9112 section 2.2 allows it).
std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

HttpParse ParseHttpRequest(std::string_view input, HttpRequest* request) {
  // The head ends at the first empty line.
  size_t end = std::string_view::npos;
  for (size_t pos = input.find('\n'); pos != std::string_view::npos;
       pos = input.find('\n', pos + 1)) {
    if (pos + 1 < input.size() && input[pos + 1] == '\n') {
      end = pos + 2;
      break;
    }
    if (pos + 2 < input.size() && input[pos + 1] == '\r' && input[pos + 2] == '\n') {
      end = pos + 3;
      break;
    }
  }
  if (end == std::string_view::npos) {
    return input.size() >= kMaxHttpHeadBytes ? HttpParse::kTooLarge : HttpParse::kNeedMore;
  }
  if (end > kMaxHttpHeadBytes) return HttpParse::kTooLarge;
  std::string_view head = input.substr(0, end);
  HttpRequest parsed;
  bool first = true;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = StripCr(head.substr(0, nl));
    head.remove_prefix(nl + 1);
    if (line.empty()) break;
    if (first) {
      first = false;
      const size_t sp1 = line.find(' ');
      const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
        return HttpParse::kBad;
      }
      std::string_view method = line.substr(0, sp1);
      std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      std::string_view version = line.substr(sp2 + 1);
      if (!IsToken(method) || target.empty() || target.front() != '/' ||
          (version != "HTTP/1.1" && version != "HTTP/1.0")) {
        return HttpParse::kBad;
      }
      parsed.method = method;
      parsed.target = target;
      parsed.version = version;
      continue;
    }
    const size_t colon = line.find(':');
    // No whitespace between a field name and its colon (RFC 9112 5.1), and
    // no obsolete line folding.
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return HttpParse::kBad;
    }
    if (EqualsNoCase(line.substr(0, colon), "authorization")) {
      if (parsed.authorization) return HttpParse::kBad;  // two: which one counts?
      parsed.authorization = std::string(Trim(line.substr(colon + 1)));
    }
  }
  if (first) return HttpParse::kBad;
  *request = std::move(parsed);
  return HttpParse::kGood;
}

std::string_view HttpPath(std::string_view target) {
  return target.substr(0, target.find('?'));
}

}  // namespace bloomgate
