// JSON documents of the formats parasurf reads, parsed with a nesting limit. The formats nest a few levels; a
// document nested a million levels deep made the recursive copies of the parsed value overflow the stack.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "parasurf/error.hpp"

namespace parasurf::io {

inline constexpr int kMaxJsonDepth = 64;

// Whether arrays and objects in `text` nest deeper than `limit` (brackets inside strings skipped; malformed text is
// left to the parser). A scan before parsing rather than the parser's callback: nlohmann's callback parser looks
// through the parent container at the end of every object, so an array of n objects took n^2 steps (30,000 edit
// targets ran for over a minute under the sanitizers).
inline bool json_nests_deeper(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// Throws Error(Parse) naming `name` for malformed JSON or nesting beyond kMaxJsonDepth.
inline nlohmann::json parse_json(std::string_view text, const std::string& name) {
  if (json_nests_deeper(text, kMaxJsonDepth))
    throw Error(ErrorKind::Parse, name + ": JSON nested more than " + std::to_string(kMaxJsonDepth) +
                                      " levels deep (no parasurf format nests that far)");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Parse, name + ": not valid JSON: " + e.what());
  }
}

}  // namespace parasurf::io
