// The JSON nesting limit: counted outside strings only, and fast on wide documents (the check runs before every
// JSON input is parsed).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "io/json_text.hpp"

namespace parasurf {
namespace {

TEST(JsonText, NestingIsCountedOutsideStrings) {
  EXPECT_FALSE(io::json_nests_deeper(R"({"a": [[1, 2], {"b": [3]}]})", 4));
  EXPECT_TRUE(io::json_nests_deeper(R"({"a": [[1, 2], {"b": [3]}]})", 3));
  // Brackets in strings, with escaped quotes and backslashes before them, do not nest.
  EXPECT_FALSE(io::json_nests_deeper(R"({"a": "[[[[{{{{", "b": "\"[[[[", "c": "\\", "d": [1]})", 2));
  EXPECT_TRUE(io::json_nests_deeper(R"({"a": "\\", "d": [[1]]})", 2));
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  EXPECT_THROW(io::parse_json(deep, "deep.json"), Error);
  EXPECT_NO_THROW(io::parse_json(std::string(64, '[') + std::string(64, ']'), "ok.json"));
}

TEST(JsonText, WideArraysOfObjectsParseInLinearTime) {
  std::string text = "[";
  for (int i = 0; i < 100000; ++i) text += (i ? ",{\"p\":[" : "{\"p\":[") + std::to_string(i) + ",1,2]}";
  text += "]";
  const auto t0 = std::chrono::steady_clock::now();
  const nlohmann::json doc = io::parse_json(text, "wide.json");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(doc.size(), 100000u);
  // Linear: well under a second even under the sanitizers (the callback parser took minutes).
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace parasurf
