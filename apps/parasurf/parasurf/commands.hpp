// Subcommands of the parasurf CLI; each registers its options and a callback.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "parasurf/error.hpp"
#include "parasurf/io.hpp"
#include "parasurf/isosurface.hpp"

namespace parasurf::cli {

void add_info(CLI::App& app);
void add_surface(CLI::App& app);
void add_tessellate(CLI::App& app);
void add_isosurface(CLI::App& app);
void add_ffd(CLI::App& app);
void add_render(CLI::App& app);
void add_view(CLI::App& app);
void add_solve(CLI::App& app);
void add_bench(CLI::App& app);
void add_completion(CLI::App& app);  // reads the whole app's definitions when run
void add_bench_patches(CLI::App& bench);  // `bench patches`, registered by add_bench
void add_bench_auto(CLI::App& bench);     // `bench auto`, registered by add_bench
void add_bench_isosurface(CLI::App& bench);  // `bench isosurface`, registered by add_bench
void add_bench_ffd(CLI::App& bench);         // `bench ffd`, registered by add_bench
void add_bench_solver(CLI::App& bench);      // `bench solver`, registered by add_bench

// A command that finished its output but wants a particular exit status (e.g. 3: no surface found).
struct ExitStatus {
  int code;
};

// Runs body() and returns what it returns; an Error it throws is thrown again naming `file` (the input it came
// from) unless its message already does, or `file` is empty.
template <class F>
auto naming_file(const std::string& file, F&& body) {
  try {
    return body();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (file.empty() || what.find(file) != std::string::npos) throw;
    throw Error(e.kind(), file + ": " + what);
  }
}

// Writes a report (JSON) through a temporary file renamed on success, so that a failure leaves no partial file;
// "-" is standard output, and pipes, FIFOs and devices are written in place. Throws Error(Io) naming the path.
void write_report(const std::string& path, const std::string& text);

// A command's JSON report (docs/formats.md, "JSON reports"): every report holds "parasurf" (the version),
// "command", "input" and "output" (null when there is none), then the command's own fields; durations are in an
// object "seconds" whose "total" is the whole run. Written as write_report does.
void write_json_report(const std::string& path, const std::string& command, const std::string& input,
                       const std::string& output, nlohmann::json fields);

// --format for commands that write meshes: the format when the output's name does not tell it (standard output, a
// pipe) or to ask for ply-ascii.
CLI::Option* add_mesh_format_option(CLI::App* cmd, std::string& format);

// --threads N (0 = all): counts above the library's limit run with that many threads, said once on stderr.
CLI::Option* add_threads_option(CLI::App* cmd, int& threads);

// A progress bar on stderr for long runs, drawn only when stderr is a terminal (never into logs or pipes).
// fraction in [0, 1]; 1 clears the line.
void progress_bar(const char* what, double fraction);

// The report's lines about the clean-up where samples equal the level (cancelled ties, welded crossings, split
// pinches), each printed when it did something.
void print_tie_cleanup(const IsosurfaceReport& rep);

// An input that is a FIFO blocks until something writes to it, as `cat` does: say so on stderr before reading.
void note_if_fifo(const std::string& path);

// MPI (built when Open MPI is found; otherwise mpi_world() is false and the rest is never called).
bool mpi_world();   // started by mpirun with more than one process
void mpi_begin();   // MPI_Init (once)
// One GPU per rank on a node, by local rank: CUDA_VISIBLE_DEVICES narrowed to it before CUDA starts (otherwise every
// rank would open a context on every GPU).
void mpi_pick_gpu();
void mpi_end();     // MPI_Finalize when started
int mpi_rank();
bool output_rank();  // the process that prints and writes files: rank 0, or the only one
[[noreturn]] void mpi_abort(int code);  // every rank ends: one rank's failure stops the run
}  // namespace parasurf::cli
namespace parasurf {
struct IsosurfaceOptions;
class VolumeSource;
struct TessellationTeam;
struct SolverTeam;
}  // namespace parasurf
namespace parasurf::cli {
// `mpirun -np N parasurf isosurface`: every rank extracts its z range; one mesh written collectively.
void isosurface_mpi(VolumeSource& volume, parasurf::IsosurfaceOptions options, const std::string& out,
                    MeshFormat format, const std::string& input, bool show, const std::string& json,
                    const std::string& balance);

// Under mpirun with several ranks: teams whose exchanges are MPI collectives (null otherwise).
std::shared_ptr<const parasurf::TessellationTeam> mpi_tessellation_team();
std::shared_ptr<const parasurf::SolverTeam> mpi_solver_team();

// "256x128" or "256" (square) -> (256, 128); throws Error naming the option.
std::pair<std::int64_t, std::int64_t> parse_pair(const std::string& text, const std::string& option);

}  // namespace parasurf::cli
