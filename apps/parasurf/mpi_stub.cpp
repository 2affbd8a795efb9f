// Without MPI the CLI runs as one process; these are never reached (mpi_world() is false).
#include <cstdlib>

#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/isosurface.hpp"
#include "parasurf/solver.hpp"
#include "parasurf/tessellate.hpp"

namespace parasurf::cli {
bool mpi_world() { return false; }
void mpi_begin() {}
void mpi_pick_gpu() {}
void mpi_end() {}
int mpi_rank() { return 0; }
bool output_rank() { return true; }
std::shared_ptr<const TessellationTeam> mpi_tessellation_team() { return nullptr; }
std::shared_ptr<const SolverTeam> mpi_solver_team() { return nullptr; }
void mpi_abort(int code) { std::exit(code); }
void isosurface_mpi(VolumeSource&, parasurf::IsosurfaceOptions, const std::string&, MeshFormat, const std::string&, bool,
                    const std::string&, const std::string&) {
  throw Error(ErrorKind::InvalidArgument, "this build has no MPI (install libopenmpi-dev and rebuild)");
}
}  // namespace parasurf::cli
