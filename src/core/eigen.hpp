// Eigen for the library's own use, in a namespace of its own: its inline functions (built with AVX2 and 32-byte
// heap alignment) then never merge at link time with the same functions of a user's Eigen built otherwise, whose
// allocations would be freed by the other's code. Include this instead of <Eigen/...>.
#pragma once
#if defined(EIGEN_WORLD_VERSION)
#error "core/eigen.hpp must come before any other Eigen header"
#endif
#define Eigen parasurf_eigen
#include <Eigen/Dense>
