// Small helpers shared by the benchmark subcommands.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "parasurf/commands.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf::cli {

// Today's date (UTC, YYYY-MM-DD) for the reports.
inline std::string today() {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

inline std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

inline std::vector<std::int64_t> split_ints(const std::string& s, const std::string& option) {
  std::vector<std::int64_t> out;
  for (const auto& t : split(s)) out.push_back(parse_pair(t, option).first);
  return out;
}

// The standard output of a shell command (peers run as Python scripts); empty when it cannot start.
inline std::string command_output(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  return out;
}

// A closed UV sphere of about `triangles` triangles (planar quads count as two).
inline PolygonMesh uv_sphere(std::int64_t triangles) {
  const int sectors = std::max(8, int(std::sqrt(double(triangles))));
  const int rings = std::max(3, int(triangles / (2 * sectors)) + 1);
  PolygonMesh m;
  const double pi = 3.14159265358979323846;
  m.positions.insert(m.positions.end(), {0, 0, 1});
  for (int r = 1; r < rings; ++r)
    for (int s = 0; s < sectors; ++s) {
      const double th = pi * r / rings, ph = 2 * pi * s / sectors;
      m.positions.insert(m.positions.end(), {std::sin(th) * std::cos(ph), std::sin(th) * std::sin(ph), std::cos(th)});
    }
  m.positions.insert(m.positions.end(), {0, 0, -1});
  const std::uint32_t south = std::uint32_t(m.vertex_count() - 1);
  auto ring = [&](int r, int s) { return std::uint32_t(1 + (r - 1) * sectors + (s % sectors)); };
  for (int s = 0; s < sectors; ++s) {
    const std::uint32_t t[3] = {0, ring(1, s), ring(1, s + 1)};
    m.add_face(t);
  }
  for (int r = 1; r + 1 < rings; ++r)
    for (int s = 0; s < sectors; ++s) {
      // Two triangles per cell, as a scanned mesh would have.
      const std::uint32_t t0[3] = {ring(r, s), ring(r + 1, s), ring(r + 1, s + 1)},
                          t1[3] = {ring(r, s), ring(r + 1, s + 1), ring(r, s + 1)};
      m.add_face(t0);
      m.add_face(t1);
    }
  for (int s = 0; s < sectors; ++s) {
    const std::uint32_t t[3] = {south, ring(rings - 1, s + 1), ring(rings - 1, s)};
    m.add_face(t);
  }
  return m;
}

}  // namespace parasurf::cli
