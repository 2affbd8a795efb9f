// Control-net text reader and writer (format in include/parasurf/io.hpp and docs/formats.md).
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "io/atomic_file.hpp"
#include "io/number_text.hpp"
#include "parasurf/error.hpp"
#include "parasurf/io.hpp"

namespace parasurf {

namespace {

struct Token {
  std::string text;
  int line;
};

std::vector<Token> tokenize(const std::string& text) {
  std::vector<Token> tokens;
  int line = 1;
  std::size_t k = 0;
  while (k < text.size()) {
    const char ch = text[k];
    if (ch == '\n') {
      ++line;
      ++k;
    } else if (ch == '#') {
      while (k < text.size() && text[k] != '\n') ++k;
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      ++k;
    } else {
      std::size_t e = k;
      while (e < text.size() && !std::isspace(static_cast<unsigned char>(text[e])) && text[e] != '#') ++e;
      tokens.push_back({text.substr(k, e - k), line});
      k = e;
    }
  }
  return tokens;
}

[[noreturn]] void fail(const std::string& name, int line, const std::string& msg) {
  throw Error(ErrorKind::Parse, name + ":" + std::to_string(line) + ": " + msg);
}

double to_number(const std::string& name, const Token& t, const char* what) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.text.c_str(), &end);
  if (end == t.text.c_str() || *end != '\0') fail(name, t.line, std::string(what) + " '" + t.text + "' is not a number");
  if (!std::isfinite(v) || errno == ERANGE) fail(name, t.line, std::string(what) + " '" + t.text + "' is not finite");
  return v;
}

int to_degree(const std::string& name, const Token& t) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(t.text.c_str(), &end, 10);
  if (end == t.text.c_str() || *end != '\0' || errno == ERANGE)
    fail(name, t.line, "degree '" + t.text + "' is not an integer");
  if (v < 1 || v > kMaxBezierDegree)
    fail(name, t.line, "degree " + t.text + " is outside 1.." + std::to_string(kMaxBezierDegree));
  return int(v);
}

}  // namespace

BezierSurface parse_control_net(const std::string& text, const std::string& name) {
  const auto tokens = tokenize(text);
  if (tokens.empty()) fail(name, 1, "empty file: expected 'bezier <m> <n>' or 'rational <m> <n>'");
  const Token& kind = tokens[0];
  if (kind.text != "bezier" && kind.text != "rational")
    fail(name, kind.line, "expected 'bezier' or 'rational', got '" + kind.text + "'");
  if (tokens.size() < 3) fail(name, kind.line, "header needs two degrees: '" + kind.text + " <m> <n>'");
  BezierSurface s;
  s.degree_u = to_degree(name, tokens[1]);
  s.degree_v = to_degree(name, tokens[2]);
  const bool rational = kind.text == "rational";
  const int per = rational ? 4 : 3;
  const std::size_t count = std::size_t(s.control_point_count());
  const std::size_t needed = 3 + count * per;
  if (tokens.size() < needed) {
    const int line = tokens.back().line;
    fail(name, line, "truncated: degree " + std::to_string(s.degree_u) + "x" + std::to_string(s.degree_v) +
                         " needs " + std::to_string(count) + " points of " + std::to_string(per) + " numbers, found " +
                         std::to_string(tokens.size() - 3) + " numbers");
  }
  if (tokens.size() > needed)
    fail(name, tokens[needed].line, "unexpected extra value '" + tokens[needed].text + "' after " +
                                        std::to_string(count) + " control points");
  s.points.resize(count * 3);
  if (rational) s.weights.resize(count);
  for (std::size_t k = 0; k < count; ++k) {
    for (int c = 0; c < 3; ++c) s.points[3 * k + c] = to_number(name, tokens[3 + k * per + c], "coordinate");
    if (rational) {
      const Token& wt = tokens[3 + k * per + 3];
      const double w = to_number(name, wt, "weight");
      if (!(w > 0)) fail(name, wt.line, "weight " + wt.text + " must be > 0");
      s.weights[k] = w;
    }
  }
  return s;
}

BezierSurface read_control_net(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open control net '" + path + "'");
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  constexpr std::streamoff kMaxBytes = 64 << 20;
  if (size > kMaxBytes) throw Error(ErrorKind::Parse, path + ": file is larger than the 64 MiB a control net may have");
  in.seekg(0);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_control_net(ss.str(), path);
}

void write_control_net(const std::string& path, const BezierSurface& s) {
  validate(s);
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os << (s.rational() ? "rational " : "bezier ") << s.degree_u << ' ' << s.degree_v << '\n';
  for (std::int64_t k = 0; k < s.control_point_count(); ++k) {
    os << io::number_text(s.points[3 * k]) << ' ' << io::number_text(s.points[3 * k + 1]) << ' '
       << io::number_text(s.points[3 * k + 2]);
    if (s.rational()) os << ' ' << io::number_text(s.weights[k]);
    os << '\n';
  }
  io::AtomicFile f(path);
  f.write(os.str());
  f.commit();
}

}  // namespace parasurf
