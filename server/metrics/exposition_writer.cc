#include "server/metrics/exposition_writer.h"

#include <fmt/format.h>

#include <cmath>

namespace bloomgate {

std::string_view ToString(MetricType type) {
  return type == MetricType::kCounter ? "counter" : "gauge";
}

std::string EscapeLabelValue(std::string_view value) {
  bool cut = false;
  if (value.size() > kMaxLabelValueBytes) {
    size_t end = kMaxLabelValueBytes;
    // Back off continuation bytes (10xxxxxx) so a multi-byte character is
    // kept whole or dropped whole.
    while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80) --end;
    value = value.substr(0, end);
    cut = true;
  }
  std::string out;
  out.reserve(value.size() + 8);
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  if (cut) out += "...";
  return out;
}

void ExpositionWriter::Family(std::string_view name, MetricType type, std::string_view help) {
  std::string escaped;
  for (char c : help) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  text_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escaped, name, ToString(type));
}

void ExpositionWriter::Labels(const MetricLabels& labels) {
  if (labels.empty()) return;
  text_ += '{';
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) text_ += ',';
    text_ += labels[i].first;
    text_ += "=\"";
    text_ += EscapeLabelValue(labels[i].second);
    text_ += '"';
  }
  text_ += '}';
}

void ExpositionWriter::Sample(std::string_view name, double value, const MetricLabels& labels) {
  text_ += name;
  Labels(labels);
  // The format's spellings of the non-finite values; {} gives the shortest
  // text that reads back as the same double.
  if (std::isnan(value)) {
    text_ += " NaN\n";
  } else if (std::isinf(value)) {
    text_ += value > 0 ? " +Inf\n" : " -Inf\n";
  } else {
    text_ += fmt::format(" {}\n", value);
  }
}

void ExpositionWriter::Sample(std::string_view name, uint64_t value, const MetricLabels& labels) {
  text_ += name;
  Labels(labels);
  text_ += fmt::format(" {}\n", value);
}

void ExpositionWriter::Single(std::string_view name, MetricType type, std::string_view help,
                              double value) {
  Family(name, type, help);
  Sample(name, value);
}

void ExpositionWriter::Single(std::string_view name, MetricType type, std::string_view help,
                              uint64_t value) {
  Family(name, type, help);
  Sample(name, value);
}

}  // namespace bloomgate
