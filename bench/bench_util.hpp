// Small helpers shared by the benchmark subcommands.
#pragma once
#include <sstream>
#include <string>
#include <vector>

#include "parasurf/commands.hpp"

namespace parasurf::cli {

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

}  // namespace parasurf::cli
