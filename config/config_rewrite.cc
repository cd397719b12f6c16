#include "config/config_rewrite.h"

#include <algorithm>
#include <map>
#include <vector>

#include "config/config_params.h"
#include "config/yaml_value.h"

namespace bloomgate {
namespace {

// The file as lines without their '\n' (a '\r' stays in its line, so a CRLF
// file keeps its endings), and whether the last one had a '\n'.
struct Lines {
  std::vector<std::string> lines;
  bool trailing_newline = true;
};

Lines SplitLines(std::string_view text) {
  Lines out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      out.lines.emplace_back(text.substr(start));
      out.trailing_newline = false;
      return out;
    }
    out.lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A line with nothing a YAML reader would take as a value: blank or a comment.
bool BlankOrComment(std::string_view line) {
  size_t first = line.find_first_not_of(" \t\r");
  return first == std::string_view::npos || line[first] == '#';
}

// The " # ..." that ends a one-line `key: value`, or "": searched after the
// value's start, skipping a quoted value (a '#' inside quotes is text).
std::string InlineComment(std::string_view line, size_t value_column) {
  size_t i = std::min(value_column, line.size());
  if (i < line.size() && (line[i] == '"' || line[i] == '\'')) {
    const char quote = line[i];
    for (++i; i < line.size(); ++i) {
      if (quote == '"' && line[i] == '\\') {
        ++i;
      } else if (line[i] == quote) {
        ++i;
        break;
      }
    }
  }
  for (; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      std::string comment(line.substr(i));
      if (!comment.empty() && comment.back() == '\r') comment.pop_back();
      return comment;
    }
  }
  return "";
}

// One setting found in the file: its key as written and the lines it spans.
struct Entry {
  const ConfigParam* param;
  std::string key;
  size_t first_line;
  size_t last_line;
  size_t value_column;  // where a one-line value starts
  std::string value;    // the text the loader would take from it
  bool readable;        // the loader would accept it
};

}  // namespace

std::string YamlScalar(std::string_view value) {
  auto plain_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '/' || c == '+' || c == '-' || c == ' ';
  };
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    return out;
  };
  const std::string folded = lower(value);
  // Words YAML reads as null, and a leading "- " (a list item) or a
  // leading/trailing space, would not read back as the same text.
  const bool plain = !value.empty() && value.front() != ' ' && value.back() != ' ' &&
                     !(value.front() == '-' && (value.size() == 1 || value[1] == ' ')) &&
                     folded != "null" && folded != "~" &&
                     std::all_of(value.begin(), value.end(), plain_char);
  if (plain) return std::string(value);
  std::string out = "\"";
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

bool RewriteConfigText(std::string_view original, const ServerConfig& running, std::string* out,
                       std::string* error) {
  Lines file = SplitLines(original);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(original));
  } catch (const YAML::Exception& e) {
    *error = "the file is no longer valid YAML (line " + std::to_string(e.mark.line + 1) +
             "): " + e.msg;
    return false;
  }
  if (!root.IsNull() && !root.IsMap()) {
    *error = "the file is no longer a map of 'key: value' lines";
    return false;
  }

  // Where each top-level key starts; a key's lines run to the next key's,
  // less the blank and comment lines before it (they belong to what follows).
  std::vector<Entry> entries;
  std::vector<size_t> key_lines;
  if (root.IsMap()) {
    for (const auto& item : root) {
      const YAML::Node& key = item.first;
      if (!key.IsScalar() || key.Mark().line < 0) continue;
      key_lines.push_back(static_cast<size_t>(key.Mark().line));
      const ConfigParam* param = FindConfigParam(key.Scalar());
      if (param == nullptr) continue;  // `users`, or a key no longer known: kept as is
      Entry entry{param, key.Scalar(), static_cast<size_t>(key.Mark().line), 0,
                  std::string::npos, "", false};
      const YAML::Mark value_mark = item.second.Mark();
      if (value_mark.line == key.Mark().line && value_mark.column >= 0) {
        entry.value_column = static_cast<size_t>(value_mark.column);
      }
      std::string why;
      entry.readable = YamlValueText(*param, item.second, &entry.value, &why);
      entries.push_back(std::move(entry));
    }
  }
  std::sort(key_lines.begin(), key_lines.end());
  for (Entry& entry : entries) {
    auto next = std::upper_bound(key_lines.begin(), key_lines.end(), entry.first_line);
    size_t end = next == key_lines.end() ? file.lines.size() : *next;
    while (end > entry.first_line + 1 && BlankOrComment(file.lines[end - 1])) --end;
    entry.last_line = end - 1;
  }

  // Compared as CONFIG GET shows them, so "1gb" in the file equals a running
  // 1073741824 and the line stays as written.
  const ServerConfig defaults;
  auto shown = [](const ServerConfig& config, const ConfigParam& param) {
    return param.get(config);
  };
  std::map<size_t, std::string> replaced;  // first line -> its new line
  std::vector<bool> dropped(file.lines.size(), false);
  std::vector<const ConfigParam*> in_file;
  for (const Entry& entry : entries) {
    in_file.push_back(entry.param);
    const std::string want = shown(running, *entry.param);
    if (entry.readable) {
      ServerConfig scratch = defaults;
      std::string why;
      if (entry.param->set(&scratch, entry.value, &why) && shown(scratch, *entry.param) == want) {
        continue;
      }
    }
    std::string line = entry.key + ": " + YamlScalar(want);
    if (entry.first_line == entry.last_line && entry.value_column != std::string::npos) {
      std::string comment = InlineComment(file.lines[entry.first_line], entry.value_column);
      if (!comment.empty()) line += "  " + comment;
    }
    if (!file.lines[entry.first_line].empty() && file.lines[entry.first_line].back() == '\r') {
      line += '\r';
    }
    replaced[entry.first_line] = std::move(line);
    for (size_t i = entry.first_line + 1; i <= entry.last_line; ++i) dropped[i] = true;
  }

  std::vector<std::string> appended;
  for (const ConfigParam& param : AllConfigParams()) {
    if (std::find(in_file.begin(), in_file.end(), &param) != in_file.end()) continue;
    const std::string want = shown(running, param);
    if (want == shown(defaults, param)) continue;
    appended.push_back(std::string(param.name) + ": " + YamlScalar(want));
  }

  out->clear();
  bool has_signature = false;
  for (size_t i = 0; i < file.lines.size(); ++i) {
    if (dropped[i]) continue;
    auto it = replaced.find(i);
    const std::string& line = it != replaced.end() ? it->second : file.lines[i];
    if (std::string_view(line).substr(0, kConfigRewriteSignature.size()) ==
        kConfigRewriteSignature) {
      has_signature = true;
    }
    *out += line;
    if (i + 1 < file.lines.size() || file.trailing_newline || !appended.empty()) *out += '\n';
  }
  if (!appended.empty()) {
    if (!has_signature) {
      *out += kConfigRewriteSignature;
      *out += '\n';
    }
    for (const std::string& line : appended) {
      *out += line;
      *out += '\n';
    }
  }
  return true;
}

}  // namespace bloomgate
