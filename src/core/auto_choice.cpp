// Per-process corrections of `auto`'s estimates (see auto_choice.hpp).
#include "core/auto_choice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>

#include "parasurf/array.hpp"

namespace parasurf::core {
namespace {

struct Corrections {
  double cpu = 1, cuda = 1;
  double gpu_call = 0;  // learned fixed cost of a GPU call, 0 until measured
  bool cpu_measured = false;
  // Per side (cpu, cuda): calls that found it close behind the chosen one, and the count at which it runs next.
  std::uint64_t close_calls[2] = {0, 0}, next_look[2] = {0, 0};
  int runs = 0;  // calls decided for a run
};

// A side that is not chosen is tried when its estimate is within this factor of the chosen side's: its estimate may
// be off by more (a calibration on another field, a GPU's typical rates, one cold run's lesson) and would never be
// corrected while the other side keeps winning. An unmeasured side is tried on the first such call, a measured
// one on the 4th, 16th, 64th... (each lesson moves an estimate part of the way only, and a single run can be
// slowed by a cold buffer or a busy core), so that trying costs a vanishing share of the calls.
constexpr double kExploreWithin = 2.0;

// Link rates by size class (log2 of the bytes), each a running geometric mean; 0 = not measured.
struct LinkRates {
  double rate[2][64] = {};
};
LinkRates& link() {
  static LinkRates r;
  return r;
}
int size_class(double bytes) { return std::clamp(int(std::lround(std::log2(std::max(bytes, 1.0)))), 0, 63); }
double blend(double old_value, double value) { return old_value > 0 ? std::sqrt(old_value * value) : value; }

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

AutoDecision decide(const char* job, DeviceEstimate raw, bool for_run) {
  AutoDecision d;
  d.cpu_seconds = raw.cpu_seconds * correction(job, Device::Cpu);
  d.cuda_seconds = raw.cuda_seconds * correction(job, Device::Cuda);
  d.device = d.cuda_seconds < d.cpu_seconds ? Device::Cuda : Device::Cpu;
  if (!for_run) return d;
  std::lock_guard<std::mutex> g(lock());
  Corrections& c = table()[job];
  // (A process's first call never explores: a one-shot run would pay for a lesson it cannot use.)
  if (++c.runs < 2 || raw.cpu_bound || !(d.cpu_seconds > 0) || !(d.cuda_seconds > 0)) return d;
  const bool gpu = d.device == Device::Cuda;
  const double chosen = gpu ? d.cuda_seconds : d.cpu_seconds, other = gpu ? d.cpu_seconds : d.cuda_seconds;
  if (other > kExploreWithin * chosen) return d;
  const bool other_measured = gpu ? c.cpu_measured : c.gpu_call > 0;
  const int side = gpu ? 0 : 1;
  const std::uint64_t calls = ++c.close_calls[side];
  if (c.next_look[side] == 0) c.next_look[side] = other_measured ? 4 : 1;
  if (calls < c.next_look[side]) return d;
  c.next_look[side] = 4 * calls;
  d.device = gpu ? Device::Cpu : Device::Cuda;
  d.exploring = true;
  d.measured_before = other_measured;
  return d;
}

void learn(const char* job, Device ran, double estimated_seconds, double measured_seconds) {
  if (!(estimated_seconds > 0) || !(measured_seconds > 0) || !std::isfinite(measured_seconds)) return;
  if (ran != Device::Cpu && ran != Device::Cuda) return;
  const double ratio = std::clamp(measured_seconds / estimated_seconds, 0.25, 4.0);
  std::lock_guard<std::mutex> g(lock());
  Corrections& c = table()[job];
  double& f = ran == Device::Cpu ? c.cpu : c.cuda;
  // A first CPU run faster than estimated replaces the estimate's factor (the estimate comes from other work); every
  // other run moves it by the geometric mean, so that one slow run (threads waking after GPU work, a page fault
  // storm, a busy core) moves it only halfway. Taken at its word, one cold first call would make the CPU look several
  // times slower than it is, and a side that looks slow is not run again to correct it.
  const bool trust = ran == Device::Cpu && !c.cpu_measured && ratio <= f;
  f = std::clamp(trust ? ratio : std::sqrt(f * ratio), 0.25, 4.0);
  if (ran == Device::Cpu) c.cpu_measured = true;
}

double link_seconds(bool up, double bytes, double typical_bytes_per_second) {
  if (!(bytes > 0)) return 0;
  const int c = size_class(bytes);
  std::lock_guard<std::mutex> g(lock());
  const double* rates = link().rate[up ? 0 : 1];
  // This size's rate, else the nearest measured class within three (a factor of 8 in size), the smaller on a tie.
  // A copy's rate grows with its size (its fixed costs spread; from 4 MiB it is staged on all cores): a smaller
  // class's rate is taken for a larger copy only where it beats the typical rate, a larger class's for a smaller
  // copy only where it falls short of it. (An 8 MiB upload at 2.5 GB/s made a 64 MiB one look 10x slower than
  // it was, and auto kept it on the CPU at 1.5-1.7x the GPU's time.)
  for (int d = 0; d <= 3; ++d)
    for (int k : {c - d, c + d})
      if (k >= 0 && k < 64 && rates[k] > 0) {
        const double r = k == c  ? rates[k]
                         : k < c ? std::max(rates[k], typical_bytes_per_second)
                                 : std::min(rates[k], typical_bytes_per_second);
        return bytes / r;
      }
  return bytes / typical_bytes_per_second;
}

void learn_link(bool up, double bytes, double seconds) {
  if (!(bytes >= 65536) || !(seconds > 0) || !std::isfinite(seconds)) return;
  std::lock_guard<std::mutex> g(lock());
  double* rates = link().rate[up ? 0 : 1];
  const int c = size_class(bytes);
  // One run moves what is known of this size by at most a factor of two (then halfway, by the blend): a copy slowed
  // by page faults or a busy host would otherwise make the GPU look slow, and a side that looks slow is not run
  // again to correct it. A size's first run is bounded by the nearest measured size within a factor of 8 in one
  // direction only (link_seconds): no slower than half a smaller copy's rate, no faster than twice a larger one's.
  const double measured = bytes / seconds;
  if (rates[c] > 0) {
    rates[c] = blend(rates[c], std::clamp(measured, rates[c] / 2, rates[c] * 2));
    return;
  }
  for (int d = 1; d <= 3; ++d)
    for (int k : {c - d, c + d})
      if (k >= 0 && k < 64 && rates[k] > 0) {
        rates[c] = k < c ? std::max(measured, rates[k] / 2) : std::min(measured, rates[k] * 2);
        return;
      }
  rates[c] = measured;
}

double gpu_call_seconds(const char* job, double typical_seconds) {
  std::lock_guard<std::mutex> g(lock());
  const auto it = table().find(job);
  return it == table().end() || it->second.gpu_call <= 0 ? typical_seconds : it->second.gpu_call;
}

double gpu_call_home_seconds(const char* job, double context_start_seconds, double typical_call_seconds,
                             double bytes_home, double typical_bytes_per_second) {
  return (cuda_context_active(0) ? 0 : context_start_seconds) + gpu_call_seconds(job, typical_call_seconds) +
         link_seconds(false, bytes_home, typical_bytes_per_second);
}

void learn_gpu_call(const char* job, double seconds) {
  if (!std::isfinite(seconds)) return;
  std::lock_guard<std::mutex> g(lock());
  double& c = table()[job].gpu_call;
  // At most a factor of two per run, as the link's rates (learn_link).
  const double bounded = c > 0 ? std::clamp(seconds, c / 2, c * 2) : seconds;
  c = blend(c, std::clamp(bounded, 1e-4, 2e-2));
}

int gpu_holding(const void* p) {
  if (!p) return -1;
  for (int d = 0; d < cuda_device_count(); ++d)
    if (cuda_context_active(d)) return cuda_device_of(p);
  return -1;
}

std::string describe(const AutoDecision& d) {
  char text[160];
  const bool gpu = d.device == Device::Cuda;
  std::snprintf(text, sizeof text, "auto chose %s: about %.3g ms against %.3g ms on %s%s", gpu ? "cuda" : "cpu",
                (gpu ? d.cuda_seconds : d.cpu_seconds) * 1e3, (gpu ? d.cpu_seconds : d.cuda_seconds) * 1e3,
                gpu ? "the cpu" : "cuda",
                !d.exploring        ? ""
                : d.measured_before ? " (trying it again: close behind, measured before)"
                                    : " (trying it once: not yet measured in this process)");
  return text;
}

}  // namespace parasurf::core
