// An output file that never leaves a partial result and never replaces what is not a regular file:
// - a regular file (or a new one) is written to a unique temporary sibling, created exclusively (never through a
//   planted link), synced and renamed over the target on commit(); a failure removes the temporary;
// - a symbolic link is kept: its target is written the same way (or in place when the target is not regular);
// - "-" and /dev/stdout (standard output), /dev/stderr, /dev/fd/N, a pipe, a FIFO, a terminal or a device is written
//   in place (there is nothing to rename, nothing to lose).
// Temporaries still open when the process is interrupted are removed by remove_partial_outputs(), which a program's
// SIGINT/SIGTERM handler may call (it is async-signal-safe).
#pragma once
#include <cstddef>
#include <string>

namespace parasurf::io {

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes);
  void write(const std::string& s) { write(s.data(), s.size()); }
  void commit();

 private:
  void flush();
  std::string path_;    // as given, for messages
  std::string target_;  // what is replaced on commit (a link's target), or empty when written in place
  std::string tmp_;
  int fd_ = -1;
  int slot_ = -1;  // in the registry of temporaries
  bool in_place_ = false, committed_ = false;
  std::string buffer_;
};

// Removes the temporaries of outputs not yet committed; async-signal-safe.
void remove_partial_outputs() noexcept;

// The descriptor that the path "-" writes to (standard output unless a program moved it, e.g. to keep its
// human-readable report off a JSON stream).
void set_standard_output(int fd) noexcept;

}  // namespace parasurf::io
