// Output files: temporary + rename for regular files only, written in place for everything else (see the header).
#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "parasurf/error.hpp"
#include "parasurf/io.hpp"

namespace parasurf::io {

namespace {

// Temporaries not yet committed, for remove_partial_outputs(): fixed storage, so that a signal handler can read it.
constexpr int kSlots = 32;
constexpr std::size_t kPathBytes = PATH_MAX;
char g_paths[kSlots][kPathBytes];
std::atomic<bool> g_used[kSlots];

int register_temporary(const std::string& path) {
  if (path.size() >= kPathBytes) return -1;
  for (int s = 0; s < kSlots; ++s) {
    bool expected = false;
    if (g_used[s].compare_exchange_strong(expected, true)) {
      std::memcpy(g_paths[s], path.c_str(), path.size() + 1);
      return s;
    }
  }
  return -1;  // more outputs at once than slots: this one is not removed on a signal (still on failure)
}

void forget_temporary(int slot) {
  if (slot >= 0) g_used[slot].store(false);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::Io, "cannot write '" + path + "': " + what);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

static std::atomic<int> g_standard_output{STDOUT_FILENO};

void set_standard_output(int fd) noexcept { g_standard_output.store(fd); }

void remove_partial_outputs() noexcept {
  for (int s = 0; s < kSlots; ++s)
    if (g_used[s].load()) unlink(g_paths[s]);
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  if (path.empty()) fail(path, "empty file name");
  // Standard output and a process's open descriptors are written in place through the descriptor itself: the
  // file behind it keeps the shell's mode (appending, a pipe), and standard output follows a program's move of it.
  int descriptor = -1;
  if (path == "-" || path == "/dev/stdout")
    descriptor = g_standard_output.load();
  else if (path == "/dev/stderr")
    descriptor = STDERR_FILENO;
  else
    for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"})
      if (path.starts_with(prefix) && path.size() > std::strlen(prefix) && path.size() < std::strlen(prefix) + 9 &&
          path.find_first_not_of("0123456789", std::strlen(prefix)) == std::string::npos)
        descriptor = std::stoi(path.substr(std::strlen(prefix)));
  if (descriptor == STDOUT_FILENO && path != "-" && path != "/dev/stdout") descriptor = g_standard_output.load();
  if (descriptor >= 0) {
    fd_ = dup(descriptor);
    if (fd_ < 0) fail(path, "descriptor " + std::to_string(descriptor) + ": " + errno_text());
    in_place_ = true;
    return;
  }
  // What is replaced: the path itself, or the final target of a symbolic link (the link stays).
  std::string target = path;
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char* resolved = realpath(path.c_str(), nullptr);
    if (resolved) {
      target = resolved;
      std::free(resolved);
    } else {  // a dangling link: its target is created where the link points
      std::error_code ec;
      const auto to = std::filesystem::read_symlink(path, ec);
      if (ec) fail(path, "cannot read the link: " + ec.message());
      target = to.is_absolute() ? to.string() : (std::filesystem::path(path).parent_path() / to).string();
    }
  }
  if (stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) fail(path, "it is a directory");
    // A pipe, FIFO, terminal or device: written in place, never replaced. (A FIFO without a reader waits here, as
    // any writer would.)
    fd_ = open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail(path, errno_text());
    in_place_ = true;
    return;
  }
  target_ = target;
  const std::filesystem::path t(target);
  const std::string dir = t.has_parent_path() ? t.parent_path().string() : std::string(".");
  std::string pattern = dir + "/." + t.filename().string() + ".parasurf-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd_ = mkstemp(name.data());  // created exclusively: never an existing file, never through a link
  if (fd_ < 0) fail(path, "cannot create a temporary file in '" + dir + "': " + errno_text());
  tmp_ = name.data();
  slot_ = register_temporary(tmp_);
  // mkstemp makes the file private (0600); the result gets what a plain creation would have (0666 less the umask),
  // or the mode of the file it replaces.
  mode_t mode = 0666;
  if (stat(target.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    mode &= ~mask;
  }
  fchmod(fd_, mode);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) close(fd_);
  if (!committed_ && !tmp_.empty()) unlink(tmp_.c_str());
  forget_temporary(slot_);
}

void AtomicFile::flush() {
  const char* p = buffer_.data();
  std::size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path_, errno == ENOSPC ? "the disk is full" : errno_text());
    }
    p += n;
    left -= std::size_t(n);
  }
  buffer_.clear();
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  constexpr std::size_t kBuffer = std::size_t(1) << 20;
  if (buffer_.size() + bytes > kBuffer) flush();
  if (bytes >= kBuffer) {
    buffer_.assign(static_cast<const char*>(data), bytes);
    flush();
    return;
  }
  buffer_.append(static_cast<const char*>(data), bytes);
}

void AtomicFile::commit() {
  flush();
  if (!in_place_ && fsync(fd_) != 0) fail(path_, errno_text());
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0 && !in_place_) fail(path_, errno_text());
  if (!in_place_) {
    if (std::rename(tmp_.c_str(), target_.c_str()) != 0) fail(path_, errno_text());
    forget_temporary(slot_);
    slot_ = -1;
  }
  committed_ = true;
}

}  // namespace parasurf::io

namespace parasurf {

void write_file(const std::string& path, const std::string& data) {
  io::AtomicFile f(path);
  f.write(data);
  f.commit();
}

void remove_partial_outputs() noexcept { io::remove_partial_outputs(); }

void set_standard_output(int fd) noexcept { io::set_standard_output(fd); }

}  // namespace parasurf
