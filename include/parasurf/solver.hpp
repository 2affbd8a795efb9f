// Subdivision solver for systems of multivariate tensor-product Bernstein polynomials, and its geometric
// applications (Park, Elber, Kim, Kim, Seong 2011: constraints in Bernstein form, de Casteljau subdivision along the
// axis where the coefficients vary most, exclusion by sign, Newton refinement).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace parasurf {

// A scalar polynomial in d variables on the unit box [0,1]^d, in tensor-product Bernstein form. Coefficient
// (i_0, ..., i_{d-1}) is at the row-major position with the last variable fastest.
struct BernsteinPoly {
  std::vector<int> degree;    // per variable, >= 0
  std::vector<double> coef;   // prod (degree[v] + 1)

  int variables() const { return int(degree.size()); }
  std::size_t size() const;
  static BernsteinPoly constant(int variables, double value);
  // A polynomial in one variable (Bernstein coefficients of degree coef.size() - 1) placed as variable `var` of
  // `variables` (degree 0 in the others): promotion of a curve coordinate to a multivariate system.
  static BernsteinPoly univariate(const std::vector<double>& coefficients, int var, int variables);
  double evaluate(const double* x) const;
};

BernsteinPoly operator+(const BernsteinPoly& a, const BernsteinPoly& b);
BernsteinPoly operator-(const BernsteinPoly& a, const BernsteinPoly& b);
BernsteinPoly operator*(const BernsteinPoly& a, const BernsteinPoly& b);  // degrees add
BernsteinPoly operator*(double s, const BernsteinPoly& a);
BernsteinPoly derivative(const BernsteinPoly& p, int var);               // d/dx_var on the unit box
BernsteinPoly elevate(const BernsteinPoly& p, int var, int degree);      // same polynomial, higher degree
// The polynomial restricted to [a, b] along `var`, reparametrised to [0, 1] (exact, by de Casteljau).
BernsteinPoly restrict_to(const BernsteinPoly& p, int var, double a, double b);

struct SolverOptions {
  double tolerance = 1e-7;            // cells narrower than this that are neither excluded nor proved are kept as candidates
  double newton_tolerance = 1e-14;    // |dx| that ends Newton
  std::int64_t max_nodes = 20'000'000;
  double max_seconds = 60;
  int threads = 0;                    // CPU threads, 0 = all (cells of one subdivision level run in parallel)
  std::function<void(int level, std::int64_t cells)> progress;  // called before each level, for long solves
};

struct Root {
  std::vector<double> x;       // in the unit box
  double residual = 0;         // max |f_i(x)|
  bool proved_single = false;  // a regular interval Jacobian proved at most one root in its cell
  int multiplicity_hint = 1;   // 2 or more: a tangent (singular) root, found as a cluster of candidate cells
};

// A region the solver could not resolve into points: the equations vanish along it (overlapping curves).
struct SolutionRegion {
  std::vector<double> lo, hi;  // bounding box in the unit box
  std::int64_t cells = 0;
};

struct SolveResult {
  std::vector<Root> roots;
  std::vector<SolutionRegion> regions;
  std::string status = "complete";  // or "limit reached: ..." with the partial result
  std::int64_t nodes = 0;
};

// All roots of the square system equations[i](x) = 0 in the unit box [0,1]^n, each once, that also satisfy
// positive[j](x) > 0 (a cell where some positive[j] <= 0 everywhere is discarded; roots are checked).
SolveResult solve_system(const std::vector<BernsteinPoly>& equations, const SolverOptions& options = {},
                         const std::vector<BernsteinPoly>& positive = {});

// ------------------------------------------------------------------------------------------------ applications

// A planar Bézier curve: control points (x, y), degree = points - 1, parameter in [0, 1].
struct BezierCurve2 {
  std::vector<std::array<double, 2>> points;
};

struct CurveIntersection {
  double s = 0, t = 0;          // parameters on the first and the second curve
  std::array<double, 2> point{};
  bool tangent = false;
};
struct CurveOverlap {           // the curves coincide for s in [s0, s1] and t in [t0, t1]
  double s0 = 0, s1 = 0, t0 = 0, t1 = 0;
};
struct CurveIntersectionResult {
  std::vector<CurveIntersection> points;
  std::vector<CurveOverlap> overlaps;
  std::string status = "complete";
};

CurveIntersectionResult intersect_curves(const BezierCurve2& a, const BezierCurve2& b, const SolverOptions& options = {});

// A planar B-spline curve: degree p >= 1, count + p + 1 non-decreasing knots, parameter in [knots[p], knots[count]].
struct BSplineCurve2 {
  int degree = 3;
  std::vector<double> knots;
  std::vector<std::array<double, 2>> points;
};
// Exact conversion to Bézier pieces by knot insertion: each piece with the parameter interval it covers.
struct BezierPiece {
  BezierCurve2 curve;
  double u0 = 0, u1 = 1;
};
std::vector<BezierPiece> bspline_to_bezier(const BSplineCurve2& c);  // Error(InvalidArgument) for bad knots or counts
// Intersections of two B-spline curves, piece by piece; parameters are the curves' own (knot) parameters and a
// root on a piece boundary is reported once.
CurveIntersectionResult intersect_curves(const BSplineCurve2& a, const BSplineCurve2& b, const SolverOptions& options = {});

// Ray traps of k >= 3 planar curves (Park et al. 2011, section 6): parameters (t_1, ..., t_k) where a light ray
// reflects from curve to curve and closes the cycle: for each i, with A = C_i - C_{i+1}, B = C_{i+2} - C_{i+1} and
// N the normal of C_{i+1}, (A.N)^2 |B|^2 = (B.N)^2 |A|^2 and (A.N)(B.N) > 0 (indices mod k).
struct RayTrap {
  std::vector<double> t;                       // one parameter per curve
  std::vector<std::array<double, 2>> points;  // the reflection points
};
struct RayTrapResult {
  std::vector<RayTrap> traps;
  std::string status = "complete";
};
RayTrapResult ray_traps(const std::vector<BezierCurve2>& curves, const SolverOptions& options = {});

}  // namespace parasurf
