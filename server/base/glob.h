// Redis-style glob matching (KEYS, SCAN MATCH, CONFIG GET, COMMAND LIST):
// `*`, `?`, `[abc]`, `[^a-z]`, and `\` to escape the next character.
#pragma once

#include <string_view>

namespace bloomgate {

bool GlobMatch(std::string_view pattern, std::string_view text, bool nocase = false);

}  // namespace bloomgate
