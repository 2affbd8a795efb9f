// Numbers in text, read with std::from_chars and written with std::to_chars: the same in every locale (a program's
// global C++ locale may write 1,5), and independent of the C++ stream facets, which misbehave when a process holds
// two copies of libstdc++ (a Python module linked with a static one beside numpy's shared one).
#pragma once
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

namespace parasurf::io {

// The whole of `s` as a number (a leading '+' allowed, as strtod allows it); false when it is not one. T: double or
// long long.
template <class T>
bool parse_number(std::string_view s, T& v) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') ++b;
  if (b == e) return false;
  const auto [p, ec] = std::from_chars(b, e, v);
  return ec == std::errc() && p == e;
}

// The shortest text that reads back as exactly `v`.
inline std::string number_text(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("nan");
}

// The whitespace-separated words of `s`, at most `limit` of them (views into `s`).
inline std::vector<std::string_view> words(std::string_view s, std::size_t limit) {
  std::vector<std::string_view> out;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  std::size_t i = 0;
  while (out.size() < limit) {
    while (i < s.size() && space(s[i])) ++i;
    if (i == s.size()) break;
    const std::size_t start = i;
    while (i < s.size() && !space(s[i])) ++i;
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

}  // namespace parasurf::io
