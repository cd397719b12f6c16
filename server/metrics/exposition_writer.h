// The Prometheus text exposition format, version 0.0.4
// (Content-Type: text/plain; version=0.0.4): one "# HELP" and one "# TYPE"
// line per metric family, then its samples, each
//   name{label="value",...} value
// Label values are escaped as the format requires (\ -> \\, " -> \",
// newline -> \n); HELP text escapes \ and newline. Key names are client data,
// so a label value is also cut to kMaxLabelValueBytes: a 512 MiB key name
// must not become a 512 MiB scrape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bloomgate {

enum class MetricType { kGauge, kCounter };
std::string_view ToString(MetricType type);

// 256 bytes: longer than any key name a dashboard can show, and 100 filters'
// labels stay under 26 KB a scrape. A cut value ends with "..." so it cannot
// be mistaken for a key of that exact name.
inline constexpr size_t kMaxLabelValueBytes = 256;

// `value` escaped for a label, cut to kMaxLabelValueBytes of input first
// (never inside a UTF-8 sequence).
std::string EscapeLabelValue(std::string_view value);

using MetricLabels = std::vector<std::pair<std::string_view, std::string_view>>;

class ExpositionWriter {
 public:
  // Starts a family: its HELP and TYPE lines. Every sample after it, until
  // the next Family, must carry this name.
  void Family(std::string_view name, MetricType type, std::string_view help);
  void Sample(std::string_view name, double value, const MetricLabels& labels = {});
  void Sample(std::string_view name, uint64_t value, const MetricLabels& labels = {});
  // Family() and one unlabelled sample.
  void Single(std::string_view name, MetricType type, std::string_view help, double value);
  void Single(std::string_view name, MetricType type, std::string_view help, uint64_t value);

  const std::string& text() const { return text_; }
  std::string Take() { return std::move(text_); }

 private:
  void Labels(const MetricLabels& labels);
  std::string text_;
};

}  // namespace bloomgate
