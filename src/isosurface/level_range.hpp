// The level-shifted range of a cell's samples, scikit-image's per-vertex value (skimage.measure.marching_cubes after
// Lewiner et al. 2003): max(largest − level, 0) − min(smallest − level, 0) in float32, NaN once a sample is NaN (as
// numpy's max and min). One accumulator for the host loops and the CUDA kernels.
#pragma once
#include <cmath>

#include "core/hd.hpp"

namespace parasurf::iso {

struct LevelRange {
  float lo = 0, hi = 0;
  bool nan = false;
  // v: a sample minus the level (a NaN compares false: left out of lo and hi, and flagged)
  PS_HD void add(float v) {
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    nan = nan || v != v;
  }
  PS_HD void merge(const LevelRange& o) {
    lo = o.lo < lo ? o.lo : lo;
    hi = o.hi > hi ? o.hi : hi;
    nan = nan || o.nan;
  }
  PS_HD float value() const { return nan ? NAN : hi - lo; }
};

}  // namespace parasurf::iso
