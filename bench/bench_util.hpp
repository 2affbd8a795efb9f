// Small helpers shared by the benchmark subcommands.
#pragma once
#include <cstdio>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "parasurf/commands.hpp"

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

}  // namespace parasurf::cli
