// Subcommands of the parasurf CLI; each registers its options and a callback.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <utility>

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
void add_bench_patches(CLI::App& bench);  // `bench patches`, registered by add_bench
void add_bench_isosurface(CLI::App& bench);  // `bench isosurface`, registered by add_bench
void add_bench_ffd(CLI::App& bench);         // `bench ffd`, registered by add_bench
void add_bench_solver(CLI::App& bench);      // `bench solver`, registered by add_bench

// A command that finished its output but wants a particular exit status (e.g. 3: no surface found).
struct ExitStatus {
  int code;
};

// Writes a report (JSON) through a temporary file renamed on success, so that a failure leaves no partial file.
// Throws Error(Io) naming the path.
void write_report(const std::string& path, const std::string& text);

// A progress bar on stderr for long runs, drawn only when stderr is a terminal (never into logs or pipes).
// fraction in [0, 1]; 1 clears the line.
void progress_bar(const char* what, double fraction);

// "256x128" or "256" (square) -> (256, 128); throws Error naming the option.
std::pair<std::int64_t, std::int64_t> parse_pair(const std::string& text, const std::string& option);

}  // namespace parasurf::cli
