// Writes a file through a temporary sibling renamed into place on commit(), so no partial output survives.
#pragma once
#include <cstdio>
#include <string>

#include "parasurf/error.hpp"

namespace parasurf::io {

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path) : path_(path), tmp_(path + ".partial") {
    file_ = std::fopen(tmp_.c_str(), "wb");
    if (!file_) throw Error(ErrorKind::Io, "cannot open '" + path + "' for writing");
  }
  ~AtomicFile() {
    if (file_) std::fclose(file_);
    if (!committed_) std::remove(tmp_.c_str());
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes) {
    if (bytes && std::fwrite(data, 1, bytes, file_) != bytes)
      throw Error(ErrorKind::Io, "write to '" + path_ + "' failed (disk full?)");
  }
  void write(const std::string& s) { write(s.data(), s.size()); }
  void commit() {
    const bool ok = std::fflush(file_) == 0;
    std::fclose(file_);
    file_ = nullptr;
    if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw Error(ErrorKind::Io, "cannot finish writing '" + path_ + "'");
    committed_ = true;
  }

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace parasurf::io
