// parasurf command-line tool: parametric and volumetric geometry on CPUs and NVIDIA GPUs.
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <unistd.h>

#include "parasurf/device.hpp"
#include "parasurf/io.hpp"

#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"

namespace parasurf::cli {

void write_report(const std::string& path, const std::string& text) { write_file(path, text); }

void write_json_report(const std::string& path, const std::string& command, const std::string& input,
                       const std::string& output, nlohmann::json fields) {
  fields["parasurf"] = PARASURF_VERSION;
  fields["command"] = command;
  fields["input"] = input.empty() ? nlohmann::json() : nlohmann::json(input);
  fields["output"] = output.empty() ? nlohmann::json() : nlohmann::json(output);
  write_report(path, fields.dump(2) + "\n");
}

CLI::Option* add_mesh_format_option(CLI::App* cmd, std::string& format) {
  return cmd
      ->add_option("--format", format,
                   "Mesh format when the output's name does not tell it (-, /dev/stdout, a pipe; PLY by default on "
                   "standard output), or ply-ascii for a text PLY")
      ->check(CLI::IsMember({"ply", "ply-ascii", "obj", "glb", "stl", "vtp", "vtu"}));
}

CLI::Option* add_threads_option(CLI::App* cmd, int& threads) {
  const int limit = cpu_thread_limit();
  return cmd
      ->add_option("--threads", threads, "CPU threads (0 = all; at most " + std::to_string(limit) + ")")
      ->check(CLI::Validator(
          [](std::string& text) {
            return text.find_first_not_of("0123456789") == std::string::npos && text.size() < 10
                       ? std::string()
                       : "must be a whole number from 0 (all) to 999999999; got '" + text + "'";
          },
          "N>=0"))
      ->each([limit](const std::string& text) {
        if (std::stoll(text) > limit)
          std::fprintf(stderr, "parasurf: --threads %s: using %d threads (the most this machine's %d hardware threads take)\n",
                       text.c_str(), limit, hardware_threads());
      });
}

void note_if_fifo(const std::string& path) {
  std::error_code ec;
  if (!path.empty() && std::filesystem::is_fifo(path, ec))
    std::fprintf(stderr, "parasurf: %s is a FIFO: waiting for a writer\n", path.c_str());
}

void print_tie_cleanup(const IsosurfaceReport& rep) {
  if (rep.duplicates_removed) std::printf("removed %lld coincident tie triangles\n", (long long)rep.duplicates_removed);
  if (rep.rounded_ties_welded)
    std::printf("welded %lld crossings that rounding put on a sample; %lld zero-area triangles removed\n",
                (long long)rep.rounded_ties_welded, (long long)rep.degenerate_removed);
  if (rep.pinched_vertices_split)
    std::printf("split %lld tie vertices where the level set pinches (one vertex per sheet)\n",
                (long long)rep.pinched_vertices_split);
}

void progress_bar(const char* what, double fraction) {
  static const bool tty = isatty(STDERR_FILENO) != 0;
  if (!tty) return;
  if (fraction >= 1) {
    std::fprintf(stderr, "\r%60s\r", "");
    return;
  }
  const int width = 30, filled = int(fraction * width);
  std::string bar(std::size_t(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r  %s [%s] %3.0f%%", what, bar.c_str(), 100 * fraction);
  std::fflush(stderr);
}

std::pair<std::int64_t, std::int64_t> parse_pair(const std::string& text, const std::string& option) {
  auto number = [&](const std::string& s) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty())
      throw Error(ErrorKind::InvalidArgument, option + " '" + text + "' is not of the form N or NxM");
    return std::int64_t(v);
  };
  const auto x = text.find('x');
  if (x == std::string::npos) {
    const auto v = number(text);
    return {v, v};
  }
  return {number(text.substr(0, x)), number(text.substr(x + 1))};
}

}  // namespace parasurf::cli

namespace {
// The device a command that may run on the GPU was given ("auto" by default; solve: "cpu"), or "" for others.
std::string gpu_device_request(int argc, char** argv) {
  if (argc < 2) return "";
  const std::string command = argv[1];
  if (command != "isosurface" && command != "tessellate" && command != "solve" && command != "surface" && command != "ffd")
    return "";
  std::string device = command == "solve" ? "cpu" : "auto";
  for (int k = 2; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--device" && k + 1 < argc) device = argv[k + 1];
    else if (arg.starts_with("--device=")) device = arg.substr(9);
  }
  return device == "cpu" ? "" : device;
}
}  // namespace

namespace {
// Ctrl-C or a kill while an output is being written: its temporary goes, then the signal ends the process as usual.
void remove_partial_outputs_and_die(int signal) {
  parasurf::remove_partial_outputs();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}
}  // namespace

int main(int argc, char** argv) {
  // An output on standard output (a mesh, a picture or a JSON report given as - or /dev/stdout) is a stream a
  // program reads: the human-readable report goes to standard error instead, and only one output may go there.
  {
    std::vector<std::string> to_stdout;
    for (int k = 2; k < argc; ++k) {
      const std::string arg = argv[k];
      for (const char* option : {"--json", "--output", "-o"}) {
        const std::string name = option;
        std::string value;
        if (arg == name && k + 1 < argc) value = argv[k + 1];
        else if (arg.starts_with(name + "=")) value = arg.substr(name.size() + 1);
        else if (name == "-o" && arg.size() > 2 && arg.starts_with("-o")) value = arg.substr(2);
        if (value == "-" || value == "/dev/stdout") to_stdout.push_back(name + " " + value);
      }
    }
    if (to_stdout.size() > 1) {
      std::fprintf(stderr, "parasurf: error: %s and %s both go to standard output; send one of them to a file\n",
                   to_stdout[0].c_str(), to_stdout[1].c_str());
      return 2;
    }
    if (!to_stdout.empty()) {
      std::fflush(stdout);
      const int stream_fd = dup(STDOUT_FILENO);
      if (stream_fd >= 0 && dup2(STDERR_FILENO, STDOUT_FILENO) >= 0) parasurf::set_standard_output(stream_fd);
    }
  }
  std::signal(SIGINT, remove_partial_outputs_and_die);
  std::signal(SIGTERM, remove_partial_outputs_and_die);
  CLI::App app{"parasurf: fast parametric and volumetric geometry on CPUs and NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parasurf " PARASURF_VERSION);
  app.footer(
      "Exit status: 0 done; 1 a file, device or run failed; 2 bad arguments or input (the message names them); 3 "
      "isosurface found no surface at a level inside the data range (an empty mesh is written); 4 solve stopped at "
      "a limit (--max-seconds, --max-cells; the partial result is written and marked); 100-119 the command "
      "line did not parse; 130/143 interrupted (no partial output is left).");
  parasurf::cli::add_info(app);
  parasurf::cli::add_surface(app);
  parasurf::cli::add_tessellate(app);
  parasurf::cli::add_isosurface(app);
  parasurf::cli::add_ffd(app);
  parasurf::cli::add_render(app);
  parasurf::cli::add_view(app);
  parasurf::cli::add_solve(app);
  parasurf::cli::add_bench(app);
  parasurf::cli::add_completion(app);
  // Under mpirun every process runs this main; a failure on one rank must stop all of them.
  const bool mpi = parasurf::cli::mpi_world();
  if (mpi) parasurf::cli::mpi_pick_gpu();  // before MPI or CUDA start: each rank sees only its GPU
  // A GPU's context takes a few hundred ms to start: it starts on a thread while MPI starts and the input is read.
  struct JoinAtExit {
    std::thread thread;
    ~JoinAtExit() {
      if (thread.joinable()) thread.join();
    }
  } warm_up;
  // A GPU this build cannot run: `auto` goes to the CPU, and says so once (an explicit cuda request fails later
  // with the same reason).
  // An isosurface on `auto` decides for itself whether the GPU is worth its start (a one-shot run of a mid-size
  // volume is not), so its context is not started ahead.
  const std::string requested = gpu_device_request(argc, argv);
  const bool decides_itself = requested == "auto" && std::string(argv[1]) == "isosurface";
  if (!requested.empty())
    warm_up.thread = std::thread([requested, decides_itself] {
      const std::string warning = parasurf::cuda_fallback_warning();
      if (!warning.empty()) {
        if (requested == "auto") std::fprintf(stderr, "parasurf: warning: %s\n", warning.c_str());
      } else if (!decides_itself) {
        parasurf::cuda_warm_up(0);
      }
    });
  if (mpi) parasurf::cli::mpi_begin();
  auto fail = [&](const char* what, int code) {
    if (mpi) {
      std::fprintf(stderr, "parasurf: error (rank %d): %s\n", parasurf::cli::mpi_rank(), what);
      std::fflush(stderr);
      parasurf::cli::mpi_abort(code);
    }
    std::fprintf(stderr, "parasurf: error: %s\n", what);
    return code;
  };
  int code = 0;
  // Only these commands share their work out across ranks; any other would run N times into the same files.
  if (mpi) {
    const std::string command = argc < 2 ? "" : argv[1];
    if (command != "isosurface" && command != "tessellate" && command != "solve")
      return fail("under mpirun only 'parasurf isosurface', 'tessellate' and 'solve' run (other commands would run once per "
                  "rank into the same files)", 2);
    // Every rank of tessellate and solve ends with the whole result; rank 0 alone reports it.
    if (command != "isosurface" && !parasurf::cli::output_rank() && !std::freopen("/dev/null", "w", stdout))
      return fail("cannot silence the output of this rank", 1);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    code = app.exit(e);
  } catch (const parasurf::cli::ExitStatus& e) {
    code = e.code;
  } catch (const parasurf::Error& e) {
    return fail(e.what(), e.kind() == parasurf::ErrorKind::InvalidArgument ? 2 : 1);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
  if (mpi) parasurf::cli::mpi_end();
  return code;
}
