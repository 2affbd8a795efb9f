// Whitespace-separated token reader over a whole file held in memory, with line numbers for messages.
#pragma once
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "parasurf/error.hpp"

namespace parasurf::io {

// The decimal step a number was written with: 10^-digits after the point, scaled by its exponent ("0.050926":
// 1e-6, "1.5e-05": 1e-6); 0 for an integer, which is exact as written.
inline double decimal_step(std::string_view t) {
  const std::size_t dot = t.find('.');
  if (dot == std::string_view::npos) return 0;
  const std::size_t e = t.find_first_of("eE", dot);
  const std::size_t digits = (e == std::string_view::npos ? t.size() : e) - dot - 1;
  long exponent = 0;
  if (e != std::string_view::npos) exponent = std::strtol(std::string(t.substr(e + 1)).c_str(), nullptr, 10);
  return std::pow(10.0, double(exponent) - double(digits));
}

struct Token {
  std::string_view text;
  int line = 0;
  bool empty() const { return text.empty(); }
};

class TextCursor {
 public:
  TextCursor(std::string_view text, std::string name) : text_(text), name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  int line() const { return line_; }

  // Next token, or an empty one at the end; '#' starts a comment when allowed.
  Token next() {
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < text_.size() && !is_space(text_[pos_])) ++pos_;
    return {text_.substr(start, pos_ - start), line_};
  }
  Token peek() {
    const std::size_t p = pos_;
    const int l = line_;
    Token t = next();
    pos_ = p;
    line_ = l;
    return t;
  }
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  // The rest of the current line, trimmed (for names).
  std::string rest_of_line() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != '\n' && text_[pos_] != '\r') ++pos_;
    std::size_t end = pos_;
    while (end > start && (text_[end - 1] == ' ' || text_[end - 1] == '\t')) --end;
    return std::string(text_.substr(start, end - start));
  }

  [[noreturn]] void fail(int line, const std::string& msg) const {
    throw Error(ErrorKind::Parse, name_ + ":" + std::to_string(line) + ": " + msg);
  }

  // Required token: fails with "expected <what>" at the end of the input.
  Token require(const std::string& what) {
    Token t = next();
    if (t.empty()) fail(line_, "unexpected end of file: expected " + what);
    return t;
  }
  double number(const std::string& what) {
    const Token t = require(what);
    return to_number(t, what);
  }
  double to_number(const Token& t, const std::string& what) const {
    const std::string s(t.text);
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') fail(t.line, what + " '" + s + "' is not a number");
    if (!std::isfinite(v) || errno == ERANGE) fail(t.line, what + " '" + s + "' is not finite");
    note_step(t.text);
    return v;
  }
  // The finest decimal step of the numbers read with a fractional part (10^-digits after the point, scaled by the
  // exponent): what a file written with a fixed number of decimals rounded its values to. 0 when none had one.
  double printed_step() const { return std::isfinite(finest_step_) ? finest_step_ : 0.0; }
  // Integer in [lo, hi].
  long long integer(const std::string& what, long long lo, long long hi) {
    const Token t = require(what);
    return to_integer(t, what, lo, hi);
  }
  long long to_integer(const Token& t, const std::string& what, long long lo, long long hi) const {
    const std::string s(t.text);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end == s.c_str() || *end != '\0' || errno == ERANGE) fail(t.line, what + " '" + s + "' is not an integer");
    if (v < lo || v > hi)
      fail(t.line, what + " " + s + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    return v;
  }

 private:
  void note_step(std::string_view t) const {
    const double step = decimal_step(t);
    if (step > 0 && step < finest_step_) finest_step_ = step;
  }
  mutable double finest_step_ = HUGE_VAL;
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (is_space(c)) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view text_;
  std::string name_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

// Whole file into memory, refusing files over max_bytes; Error(Io) names the file.
std::string read_text_file(const std::string& path, const std::string& what, std::uint64_t max_bytes);

}  // namespace parasurf::io
