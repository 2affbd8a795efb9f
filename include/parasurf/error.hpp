// parasurf::Error — the one exception type the library throws at its API boundary.
#pragma once
#include <stdexcept>
#include <string>

namespace parasurf {

// What went wrong, broadly, so that callers (the CLI, Python) can map it to an exit code or exception type.
enum class ErrorKind { InvalidArgument, Parse, OutOfMemory, Device, Io, LimitReached };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace parasurf
