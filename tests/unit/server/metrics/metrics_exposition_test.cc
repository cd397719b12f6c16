// The text exposition format 0.0.4 as server/metrics/exposition_writer
// writes it: HELP/TYPE lines, label escaping and the bound on a label's size.
#include <gtest/gtest.h>

#include <string>

#include "server/metrics/exposition_writer.h"

namespace bloomgate {
namespace {

TEST(ExpositionWriter, FamilyHasHelpAndTypeLinesThenItsSamples) {
  ExpositionWriter w;
  w.Family("bloomgate_filter_items", MetricType::kGauge, "Items in the filter");
  w.Sample("bloomgate_filter_items", uint64_t{42}, {{"key", "a"}, {"type", "MBbloom--"}});
  w.Single("redis_commands_processed_total", MetricType::kCounter, "commands", uint64_t{7});
  EXPECT_EQ(w.text(),
            "# HELP bloomgate_filter_items Items in the filter\n"
            "# TYPE bloomgate_filter_items gauge\n"
            "bloomgate_filter_items{key=\"a\",type=\"MBbloom--\"} 42\n"
            "# HELP redis_commands_processed_total commands\n"
            "# TYPE redis_commands_processed_total counter\n"
            "redis_commands_processed_total 7\n");
}

TEST(ExpositionWriter, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  // Other bytes, CR and tab included, are legal in a label value as they are.
  EXPECT_EQ(EscapeLabelValue("x\ry\tz{}=,"), "x\ry\tz{}=,");
  ExpositionWriter w;
  w.Sample("m", uint64_t{1}, {{"key", "evil\"} 1\nfake_metric 2"}});
  // One line: the client's newline and quote cannot start a sample of their own.
  EXPECT_EQ(w.text(), "m{key=\"evil\\\"} 1\\nfake_metric 2\"} 1\n");
}

TEST(ExpositionWriter, HelpTextEscapesBackslashAndNewline) {
  ExpositionWriter w;
  w.Family("m", MetricType::kGauge, "two\nlines \\ here");
  EXPECT_EQ(w.text(), "# HELP m two\\nlines \\\\ here\n# TYPE m gauge\n");
}

TEST(ExpositionWriter, ALongLabelValueIsCutAndMarked) {
  const std::string name(100'000, 'k');
  const std::string escaped = EscapeLabelValue(name);
  EXPECT_EQ(escaped, std::string(kMaxLabelValueBytes, 'k') + "...");
  // Exactly at the bound: kept whole, unmarked.
  EXPECT_EQ(EscapeLabelValue(std::string(kMaxLabelValueBytes, 'k')),
            std::string(kMaxLabelValueBytes, 'k'));
}

TEST(ExpositionWriter, ACutNeverSplitsAUtf8Character) {
  // 255 ASCII bytes then a 2-byte "é": the cut at 256 would fall inside it.
  const std::string name = std::string(kMaxLabelValueBytes - 1, 'a') + "\xC3\xA9" + "tail";
  EXPECT_EQ(EscapeLabelValue(name), std::string(kMaxLabelValueBytes - 1, 'a') + "...");
}

TEST(ExpositionWriter, DoublesUseTheFormatsSpellings) {
  ExpositionWriter w;
  w.Sample("a", 0.25);
  w.Sample("b", 2.5e-29);
  w.Sample("c", std::numeric_limits<double>::quiet_NaN());
  w.Sample("d", std::numeric_limits<double>::infinity());
  w.Sample("e", -std::numeric_limits<double>::infinity());
  EXPECT_EQ(w.text(), "a 0.25\nb 2.5e-29\nc NaN\nd +Inf\ne -Inf\n");
}

}  // namespace
}  // namespace bloomgate
