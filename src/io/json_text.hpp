// JSON documents of the formats parasurf reads, parsed with a nesting limit. The formats nest a few levels; a
// document nested a million levels deep made the recursive copies of the parsed value overflow the stack.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "parasurf/error.hpp"

namespace parasurf::io {

inline constexpr int kMaxJsonDepth = 64;

// Throws Error(Parse) naming `name` for malformed JSON or nesting beyond kMaxJsonDepth.
inline nlohmann::json parse_json(std::string_view text, const std::string& name) {
  try {
    return nlohmann::json::parse(text, [&name](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxJsonDepth)
        throw Error(ErrorKind::Parse, name + ": JSON nested more than " + std::to_string(kMaxJsonDepth) +
                                          " levels deep (no parasurf format nests that far)");
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Parse, name + ": not valid JSON: " + e.what());
  }
}

}  // namespace parasurf::io
