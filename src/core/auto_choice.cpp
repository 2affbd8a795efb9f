// Per-process corrections of `auto`'s estimates (see auto_choice.hpp).
#include "core/auto_choice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>

namespace parasurf::core {
namespace {

struct Corrections {
  double cpu = 1, cuda = 1;
};

std::mutex& lock() {
  static std::mutex m;
  return m;
}
std::map<std::string, Corrections>& table() {
  static std::map<std::string, Corrections> t;
  return t;
}

}  // namespace

double correction(const char* job, Device side) {
  std::lock_guard<std::mutex> g(lock());
  const auto it = table().find(job);
  if (it == table().end()) return 1;
  return side == Device::Cpu ? it->second.cpu : it->second.cuda;
}

AutoDecision decide(const char* job, DeviceEstimate raw) {
  AutoDecision d;
  d.cpu_seconds = raw.cpu_seconds * correction(job, Device::Cpu);
  d.cuda_seconds = raw.cuda_seconds * correction(job, Device::Cuda);
  d.device = d.cuda_seconds < d.cpu_seconds ? Device::Cuda : Device::Cpu;
  return d;
}

void learn(const char* job, Device ran, double estimated_seconds, double measured_seconds) {
  if (!(estimated_seconds > 0) || !(measured_seconds > 0) || !std::isfinite(measured_seconds)) return;
  if (ran != Device::Cpu && ran != Device::Cuda) return;
  const double ratio = std::clamp(measured_seconds / estimated_seconds, 0.25, 4.0);
  std::lock_guard<std::mutex> g(lock());
  Corrections& c = table()[job];
  double& f = ran == Device::Cpu ? c.cpu : c.cuda;
  // Geometric mean with the last factor: one slow run (a page fault storm, a busy core) moves it only halfway.
  f = std::clamp(std::sqrt(f * ratio), 0.25, 4.0);
}

std::string describe(const AutoDecision& d) {
  char text[160];
  const bool gpu = d.device == Device::Cuda;
  std::snprintf(text, sizeof text, "auto chose %s: about %.3g ms against %.3g ms on %s", gpu ? "cuda" : "cpu",
                (gpu ? d.cuda_seconds : d.cpu_seconds) * 1e3, (gpu ? d.cpu_seconds : d.cuda_seconds) * 1e3,
                gpu ? "the cpu" : "cuda");
  return text;
}

}  // namespace parasurf::core
