// Coincident arcs of two planar Bézier curves, found directly instead of traced by subdivision: where two
// polynomial curves share an arc, their parameters are related by an affine map there (Sederberg, "Improperly
// parametrized rational curves", CAGD 3, 1986: a proper polynomial parametrisation is unique up to an affine
// change of parameter), and each end of the shared arc is an end of one of the two curves.
#pragma once
#include <array>
#include <optional>

#include "parasurf/solver.hpp"

namespace parasurf::solver {

// Where curves a and b coincide (their control points agree within a 1e-9 fraction of the pair's size after both
// pieces are raised to one degree) over an arc longer than a point: s in [s0, s1] on a, t in [t0, t1] on b.
// Candidate maps come from the curves' ends that lie on the other curve, so the test is cheap when no end does.
std::optional<CurveOverlap> coincident_arcs(const BezierCurve2& a, const BezierCurve2& b);

// The parameter where c passes within `eps` of p (the nearest such pass), or NaN where it does not.
double parameter_on(const BezierCurve2& c, const std::array<double, 2>& p, double eps);

}  // namespace parasurf::solver
