// The binary PLY layout of parasurf's meshes (public in parasurf/distributed.hpp): shared by the PLY writer and the
// MPI writer, which writes every rank's records at their offsets of one file.
#pragma once
#include "parasurf/distributed.hpp"

namespace parasurf::io {

using distributed::PlyLayout;

}  // namespace parasurf::io
