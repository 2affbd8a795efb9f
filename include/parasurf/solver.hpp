// Subdivision solver for systems of multivariate tensor-product Bernstein polynomials, and its geometric
// applications (Park, Elber, Kim, Kim, Seong 2011: constraints in Bernstein form, de Casteljau subdivision along the
// axis where the coefficients vary most, exclusion by sign, Newton refinement).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "parasurf/bezier.hpp"
#include "parasurf/device.hpp"
#include "parasurf/patches.hpp"

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
  // The value and the gradient (d/dx_v for every variable v, into gradient[0 .. variables())) in one pass; up to
  // 7 variables.
  double evaluate_with_gradient(const double* x, double* gradient) const;
};

BernsteinPoly operator+(const BernsteinPoly& a, const BernsteinPoly& b);
BernsteinPoly operator-(const BernsteinPoly& a, const BernsteinPoly& b);
BernsteinPoly operator*(const BernsteinPoly& a, const BernsteinPoly& b);  // degrees add
BernsteinPoly operator*(double s, const BernsteinPoly& a);
BernsteinPoly derivative(const BernsteinPoly& p, int var);               // d/dx_var on the unit box
BernsteinPoly elevate(const BernsteinPoly& p, int var, int degree);      // same polynomial, higher degree
// The polynomial restricted to [a, b] along `var`, reparametrised to [0, 1] (exact, by de Casteljau).
BernsteinPoly restrict_to(const BernsteinPoly& p, int var, double a, double b);

// h(r, s) = (f(r) - f(s)) / (r - s) for a univariate Bernstein polynomial f (its coefficients), as a polynomial of
// degree deg f - 1 in variables var_r and var_s of `variables`: the trivial factor of f(r) - f(s) removed exactly.
BernsteinPoly divided_difference(const std::vector<double>& f, int var_r, int var_s, int variables);
// (f(r) - f(e)) / (r - e) for the end e = 0 or 1 of the unit interval, in variable var_r.
BernsteinPoly divided_difference_at_end(const std::vector<double>& f, int end, int var_r, int variables);

// How the CPU engine shares the work among its threads: level by level (each level's cells in parallel, then the
// next level), or the paper's shared lock-free task buffer (threads claim and add nodes through atomic indices,
// nodes of every system of a batch in one buffer, no barrier between levels).
enum class SolverCpuScheme { Levels, TaskBuffer };

// Several cooperating processes solving one batch (MPI ranks; the CLI sets this up under mpirun): the systems of
// solve_systems and sample_solution_sets are dealt out round robin, each member solves its own, and `all_gather`
// gives every member every result, so that all members go on alike (and only one writes the output).
struct SolverTeam {
  int member = 0, members = 1;
  // Every member's bytes in member order, this member's included.
  std::function<std::vector<std::string>(const std::string& mine)> all_gather;
};

struct SolverOptions {
  double tolerance = 1e-7;            // cells narrower than this that are neither excluded nor proved are kept as candidates
  double newton_tolerance = 1e-14;    // |dx| that ends Newton
  // Equations count as met where |f_i| is at most this (in the equations' units): a cell is excluded only where
  // some equation stays beyond it. Nonzero keeps near misses as candidates (roots of multiplicity 2 and more that
  // the rounding of the input parted, which then come out as tangent roots); the curve functions set it.
  double zero_slack = 0;
  std::int64_t max_nodes = 20'000'000;  // cells per system (a batch may take this times its systems in all)
  double max_seconds = 60;
  int threads = 0;                    // CPU threads, 0 = all (cells of one subdivision level run in parallel)
  std::function<void(int level, std::int64_t cells)> progress;  // called before each level, for long solves
  // Polled before each level, from whichever thread runs the solve (applications run many at once): true ends the
  // solve with status "interrupted (partial result)".
  std::function<bool()> stop;
  // Engine: Cpu = OpenMP threads over the cells of each level (or over the systems of a batch); Cuda = the
  // GPU-resident breadth-first engine (each level's survivors compacted by a device scan, nodes never leave the
  // GPU); Hybrid = the paper's scheme (the GPU subdivides and tests, the CPU reads the results and builds each
  // level's node list); Auto = Cuda for a batch of at least 128 systems per CPU thread (and 2048) when a device is
  // present, else Cpu (the GPU's round trip per level outweighs its speed on fewer). Newton and clustering run on
  // the CPU for all.
  Device device = Device::Cpu;
  SolverCpuScheme cpu_scheme = SolverCpuScheme::TaskBuffer;
  std::shared_ptr<const SolverTeam> team;  // null: this process alone; batches of one system are never shared
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
// Many independent systems at once (positive: empty, or one list per system): the CPU engine runs them in
// parallel, the GPU engines in one breadth-first traversal per shape of system.
std::vector<SolveResult> solve_systems(const std::vector<std::vector<BernsteinPoly>>& equations, const SolverOptions& options = {},
                                       const std::vector<std::vector<BernsteinPoly>>& positive = {});

// Solution sets of dimension 1 or more (fewer equations than variables: surface-surface intersection curves,
// bisectors). The box is subdivided into cells of width <= resolution that may hold the set; each contributes the
// point of the set that minimum-norm Newton reaches from its centre (kept when it converges within half a cell).
struct SolutionSample {
  std::vector<double> x;
  double residual = 0;
  std::vector<double> tangent;  // unit direction of the set at x when it is a curve (equations = variables - 1)
};
struct SolutionSetResult {
  std::vector<SolutionSample> samples;
  std::string status = "complete";
  std::int64_t nodes = 0;
};
SolutionSetResult sample_solution_set(const std::vector<BernsteinPoly>& equations, int variables, double resolution,
                                      const SolverOptions& options = {}, const std::vector<BernsteinPoly>& positive = {});
std::vector<SolutionSetResult> sample_solution_sets(const std::vector<std::vector<BernsteinPoly>>& equations, int variables,
                                                    double resolution, const SolverOptions& options = {},
                                                    const std::vector<std::vector<BernsteinPoly>>& positive = {});
// Orders points of curves into polylines (indices into points): each step goes to the nearest unused point ahead
// along the curve's tangent within 3 x spacing; a polyline that comes back to its start is closed (first index
// repeated at the end). threads: for the neighbour counts (0 = all).
std::vector<std::vector<std::size_t>> link_polylines(const std::vector<std::vector<double>>& points,
                                                     const std::vector<std::vector<double>>& tangents, double spacing,
                                                     int threads = 0);

// ------------------------------------------------------------------------------------------------ applications

// A planar Bézier curve: control points (x, y), degree = points - 1, parameter in [0, 1].
struct BezierCurve2 {
  std::vector<std::array<double, 2>> points;
};
// The piece of `c` over [t0, t1] as a curve of its own, by de Casteljau (t0 > t1: the piece reversed).
BezierCurve2 curve_piece(const BezierCurve2& c, double t0, double t1);

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
// Many pairs at once (collision queries, every pair of curves of a drawing): one batch of systems, which the CPU
// engine spreads over its threads and the GPU engines solve in one traversal; results in the pairs' order, each as
// intersect_curves gives it.
std::vector<CurveIntersectionResult> intersect_curve_pairs(const std::vector<std::pair<BezierCurve2, BezierCurve2>>& pairs,
                                                           const SolverOptions& options = {});
// The same for curves packed one after the other, as arrays hold them (no vector per curve): pair k's first curve
// is the next counts[2k] control points of `points`, its second the counts[2k + 1] after them; the counts must
// add up to points.size().
std::vector<CurveIntersectionResult> intersect_curve_pairs(std::span<const std::array<double, 2>> points,
                                                           std::span<const std::int64_t> counts,
                                                           const SolverOptions& options = {});

// The point of a set of polynomial Bézier patches nearest to each query point (point projection, as CAD kernels'
// "project a point on a surface", for many points at once): every critical point of the distance inside a patch
// and on its edges, and the corners, among the patches whose control boxes come near enough; all their systems are
// solved in one batch. Where a query has a continuum of nearest points (on an axis of symmetry), one of them.
struct ClosestPoint {
  std::int64_t patch = -1;        // index into the patches; on a tie, the lowest
  double u = 0, v = 0;            // parameters on that patch
  std::array<double, 3> point{};  // the patch at (u, v)
  double distance = 0;
};
struct ClosestPointsResult {
  std::vector<ClosestPoint> points;  // one per query, in order
  std::int64_t systems = 0;          // interior and edge systems solved
  std::string status = "complete";   // else the first partial system's status (a limit reached)
};
ClosestPointsResult closest_points(const std::vector<BezierSurface>& patches, const std::vector<std::array<double, 3>>& queries,
                                   const SolverOptions& options = {});

// Rays against a set of polynomial Bézier patches (ray casting a patch model without tessellating it): for each
// ray origin + t * direction, the nearest point with t > t_min where it meets a patch. The ray is the meeting of
// two planes, so on a patch it is two equations in (u, v) whose coefficients are the control points' signed
// distances to the planes; every patch whose control box (and one of its 4 x 4 sub-patch boxes) the ray passes
// through gives one system, and all systems are solved in one batch. A ray through a seam hits (each patch's
// domain is closed); a ray grazing a patch meets it at a tangent root.
struct RayHit {
  std::int64_t patch = -1;        // index into the patches (the lowest on a tie); -1: the ray misses them all
  double u = 0, v = 0;            // parameters on that patch
  double t = 0;                   // point = origin + t * direction
  std::array<double, 3> point{};  // the patch at (u, v)
};
struct RayHitsResult {
  std::vector<RayHit> hits;         // one per ray, in order
  std::int64_t systems = 0;         // ray-patch systems solved
  std::string status = "complete";  // else the first partial system's status (a limit reached)
};
RayHitsResult intersect_rays(const std::vector<BezierSurface>& patches, const std::vector<std::array<double, 3>>& origins,
                             const std::vector<std::array<double, 3>>& directions, const SolverOptions& options = {},
                             double t_min = 0);

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
std::vector<BezierPiece> bspline_to_bezier(const BSplineCurve2& c);
// The knot vector that makes degree-p control points one Bézier span on [0, 1]: p + 1 zeros, p + 1 ones.
std::vector<double> bezier_knots(int degree);  // Error(InvalidArgument) for bad knots or counts
// Intersections of two B-spline curves, piece by piece; parameters are the curves' own (knot) parameters and a
// root on a piece boundary is reported once.
CurveIntersectionResult intersect_curves(const BSplineCurve2& a, const BSplineCurve2& b, const SolverOptions& options = {});

// Hausdorff distance between two planar curves (Elber & Grandine 2008; Park et al. 2011, section 6.1): the larger of
// the one-sided distances max_t min_r |A(t) - B(r)| and the reverse, each with the pair of points where it is
// attained. Candidates come from curve ends, antipodal pairs <A - B, A'> = <A - B, B'> = 0 and A crossing the
// self-bisector of B (three equations in (t, r, s), the trivial factor (r - s) removed); each candidate is measured
// by an exact closest-point search, so the reported pair is a true closest pair.
struct HausdorffPair {
  double distance = 0;
  double t = 0, r = 0;          // parameter on the "from" curve, and of its closest point on the other curve
  std::array<double, 2> from{}, to{};
};
struct HausdorffResult {
  double distance = 0;
  HausdorffPair a_to_b, b_to_a;  // where each one-sided distance is attained
  std::int64_t candidates = 0;   // candidate parameters measured (both directions)
  std::string status = "complete";
};
HausdorffResult hausdorff_distance(const BezierCurve2& a, const BezierCurve2& b, const SolverOptions& options = {});
HausdorffResult hausdorff_distance(const BSplineCurve2& a, const BSplineCurve2& b, const SolverOptions& options = {});

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

// ------------------------------------------------------------------------------------------------ surfaces
// Surfaces are non-rational B-spline surfaces (BSplineSurface of patches.hpp; a Bézier patch is the clamped
// B-spline of one span); parameters in results are the surfaces' own knot parameters.

// Intersection curves of two surfaces: x1(u1,v1) = x2(u2,v2), three equations in four unknowns. Each piece pair
// whose boxes meet is sampled at `resolution` (a fraction of a knot span); the samples, each on both surfaces to
// within the Newton residual, are linked into polylines across piece boundaries.
struct IntersectionCurve {
  std::vector<std::array<double, 3>> points;
  std::vector<std::array<double, 4>> params;  // (u1, v1, u2, v2) per point
  bool closed = false;                        // the last point repeats the first
  double residual = 0;                        // largest |x1 - x2| at the samples
};
// Where the surfaces coincide over an area (coplanar or overlapping faces): the intersection is 2-D there, and the
// samples it gave are reported as a region, not as curves. Boxes in (u1, v1, u2, v2).
struct SurfaceOverlap {
  std::array<double, 4> lo{}, hi{};
  std::int64_t samples = 0;  // intersection samples inside the region
};
struct SurfaceIntersectionResult {
  std::vector<IntersectionCurve> curves;
  std::vector<SurfaceOverlap> overlaps;
  std::string status = "complete";
};
SurfaceIntersectionResult intersect_surfaces(const BSplineSurface& a, const BSplineSurface& b, double resolution = 1.0 / 64,
                                             const SolverOptions& options = {});

// A motion by uniform scale and translation along a B-spline curve in (scale, tx, ty, tz): T(t)[P] = scale(t) P +
// (tx, ty, tz)(t); the scale must stay positive (its control values are checked).
struct Motion {
  int degree = 3;
  std::vector<double> knots;
  std::vector<std::array<double, 4>> points;
};
// Contact points of T(t)[S1] and S2 (Park et al. 2011, section 6.2): T(t)[S1(u1,v1)] = S2(u2,v2) and both tangents
// of S1 normal to S2's normal: five equations in (u1, v1, u2, v2, t).
struct ContactPoint {
  double u1 = 0, v1 = 0, u2 = 0, v2 = 0, t = 0;
  std::array<double, 3> point{};  // on S2
  double residual = 0;
  bool proved_single = false;
};
// Where the surfaces stay in contact over a set rather than at points (parallel planar faces brought into one plane,
// surfaces that coincide): the times [t0, t1] it spans and the box (u1, v1, u2, v2) of the contact set over them.
struct ContactRegion {
  double t0 = 0, t1 = 0;
  std::array<double, 4> lo{}, hi{};
};
struct ContactResult {
  std::vector<ContactPoint> contacts;  // by time
  std::vector<ContactRegion> regions;  // by time
  std::int64_t combinations = 0;       // (piece, piece, motion piece) systems solved after the box test
  std::string status = "complete";
};
ContactResult contact_points(const BSplineSurface& moving, const BSplineSurface& fixed, const Motion& motion,
                             const SolverOptions& options = {});

// Point samples of the bisector of two surfaces (Elber & Kim; Park et al. 2011, section 6.5): points P equidistant
// from S1(u,v) and S2(s,t) on both normals. With D = S1 - S2 and delta = -2 D <n1, D> + n1 |D|^2 the conditions
// read <delta, S2_s> = <delta, S2_t> = 0 (two equations in four unknowns, a surface of solutions); it is sampled
// on a grid of S1's parameters (spacing `resolution` of a knot span), where they become a square system in (s, t)
// whose every root is a sample: the samples come parameterised by S1, ready for fitting.
struct BisectorSample {
  double u = 0, v = 0, s = 0, t = 0;
  std::array<double, 3> point{};
};
struct SurfaceBisectorResult {
  std::vector<BisectorSample> samples;
  // Where the surfaces coincide (coplanar pieces, or pieces that are one surface at other degrees or with reversed
  // or swapped parameters): every point on their common normal there is equidistant, so the bisector is no surface;
  // the areas are reported as boxes in (u, v, s, t). Coplanar areas have no samples.
  std::vector<SurfaceOverlap> overlaps;
  std::string status = "complete";
};
SurfaceBisectorResult surface_bisector(const BSplineSurface& a, const BSplineSurface& b, double resolution = 1.0 / 16,
                                       const SolverOptions& options = {});

// The bisector of two planar curves as polylines: points P on the normals of C1(s) and C2(t) with
// |P - C1(s)| = |P - C2(t)|, one equation in (s, t) after P is eliminated by Cramer's rule.
struct BisectorCurve {
  std::vector<std::array<double, 2>> points;
  std::vector<std::array<double, 2>> params;  // (s, t) per point
  bool closed = false;
};
struct CurveBisectorResult {
  std::vector<BisectorCurve> curves;
  std::string status = "complete";
};
CurveBisectorResult curve_bisector(const BSplineCurve2& a, const BSplineCurve2& b, double resolution = 1.0 / 128,
                                   const SolverOptions& options = {});

// Work of the GPU solver engines since the process started, for a benchmark's floor: bytes of node coefficients
// read and written, subdivision levels (each a device round trip) and cells tested; and the proved cells whose root
// the device's Newton settled (the others are settled on the host). Zero without CUDA.
struct SolverGpuTraffic {
  std::int64_t bytes = 0, levels = 0, cells = 0, settled = 0;
};
SolverGpuTraffic solver_gpu_traffic();
// Wall time spent inside the subdivision engines (any engine, all threads' calls added) since the process
// started: a batch's time less this is the host's own share (building equations, Newton, clustering).
double solver_engine_seconds();

}  // namespace parasurf
