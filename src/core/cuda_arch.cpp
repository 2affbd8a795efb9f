// Matching a build's CUDA architecture list against a device (see cuda_arch.hpp for the rules).
#include "core/cuda_arch.hpp"

#include <cctype>
#include <vector>

namespace parasurf::core {
namespace {

struct Arch {
  int number = 0;        // 90 for 9.0, 120 for 12.0
  bool specific = false;  // "90a": that capability only
  bool real = true, virt = true;
};

// Splits on ',' and ';', parses "NN[a|f][-real|-virtual]"; false when a token is not of that form.
bool parse(std::string_view list, std::vector<Arch>& out) {
  std::size_t i = 0;
  while (i <= list.size()) {
    std::size_t j = list.find_first_of(",;", i);
    if (j == std::string_view::npos) j = list.size();
    std::string_view t = list.substr(i, j - i);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
    i = j + 1;
    if (t.empty()) continue;
    Arch a;
    std::size_t k = 0;
    while (k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) {
      a.number = a.number * 10 + (t[k] - '0');
      if (a.number > 10000) return false;
      ++k;
    }
    if (k == 0 || a.number < 10) return false;
    if (k < t.size() && (t[k] == 'a' || t[k] == 'f')) {
      a.specific = t[k] == 'a';
      ++k;
    }
    const std::string_view rest = t.substr(k);
    if (rest == "-real") a.virt = false;
    else if (rest == "-virtual") a.real = false;
    else if (!rest.empty()) return false;
    out.push_back(a);
  }
  return true;
}

}  // namespace

ImageMatch match_cuda_image(std::string_view architectures, int major, int minor) {
  std::vector<Arch> archs;
  if (!parse(architectures, archs) || archs.empty()) return ImageMatch::Unknown;
  const int device = major * 10 + minor;
  bool ptx = false;
  for (const Arch& a : archs) {
    const int a_major = a.number / 10, a_minor = a.number % 10;
    if (a.real && a_major == major && (a.specific ? a_minor == minor : a_minor <= minor)) return ImageMatch::Binary;
    if (a.virt && !a.specific && a.number <= device) ptx = true;
  }
  return ptx ? ImageMatch::Ptx : ImageMatch::None;
}

std::string describe_cuda_architectures(std::string_view architectures) {
  std::vector<Arch> archs;
  if (!parse(architectures, archs) || archs.empty()) return std::string(architectures);
  std::string cubins, ptx;
  for (const Arch& a : archs) {
    const std::string name = std::to_string(a.number) + (a.specific ? "a" : "");
    if (a.real) cubins += (cubins.empty() ? "" : ", ") + name;
    if (a.virt) ptx += (ptx.empty() ? "" : ", ") + name;
  }
  std::string s = cubins.empty() ? std::string("no cubins") : "sm_" + cubins;
  if (!ptx.empty()) s += " (PTX " + ptx + ")";
  return s;
}

}  // namespace parasurf::core
