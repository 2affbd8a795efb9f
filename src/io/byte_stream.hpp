// Sequential byte streams over a file region: plain (seekable) or deflate-compressed (gzip or zlib, forward only).
#pragma once
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "parasurf/error.hpp"

namespace parasurf::io {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads exactly `bytes` starting at uncompressed position `pos`; throws Error(Io/Parse) when the data ends early.
  virtual void read_at(std::uint64_t pos, void* out, std::uint64_t bytes) = 0;
};

class PlainStream final : public ByteStream {
 public:
  PlainStream(std::string path, std::uint64_t offset) : path_(std::move(path)), offset_(offset) {
    file_ = std::fopen(path_.c_str(), "rb");
    if (!file_) throw Error(ErrorKind::Io, "cannot open '" + path_ + "' for reading");
  }
  ~PlainStream() override { std::fclose(file_); }
  void read_at(std::uint64_t pos, void* out, std::uint64_t bytes) override {
    if (fseeko(file_, off_t(offset_ + pos), SEEK_SET) != 0 ||
        std::fread(out, 1, bytes, file_) != bytes)
      throw Error(ErrorKind::Io, "'" + path_ + "': data ends early (wanted " + std::to_string(bytes) +
                                     " bytes at byte " + std::to_string(offset_ + pos) + ")");
  }

 private:
  std::string path_;
  std::uint64_t offset_;
  std::FILE* file_;
};

// Inflates the stream that starts at file byte `offset` (gzip or zlib header detected; gzip members one after
// another, as bgzip and `cat a.gz b.gz` write them, are one stream); position 0 is its uncompressed byte `skip`.
// The end of the last read (up to `kTail` bytes) is kept, so that slabs which share a slice with the one before
// read forward only; reading further back restarts from the beginning.
class InflateStream final : public ByteStream {
 public:
  InflateStream(std::string path, std::uint64_t offset, std::uint64_t skip = 0)
      : path_(std::move(path)), offset_(offset), skip_(skip), in_(1 << 18) {
    file_ = std::fopen(path_.c_str(), "rb");
    if (!file_) throw Error(ErrorKind::Io, "cannot open '" + path_ + "' for reading");
    restart();
  }
  ~InflateStream() override {
    inflateEnd(&z_);
    std::fclose(file_);
  }
  void read_at(std::uint64_t pos, void* out, std::uint64_t bytes) override {
    pos += skip_;
    auto* dst = static_cast<unsigned char*>(out);
    if (pos < position_ && pos >= position_ - tail_.size()) {  // from the kept tail, then onwards
      const std::uint64_t from = pos - (position_ - tail_.size());
      const std::uint64_t n = std::min<std::uint64_t>(bytes, tail_.size() - from);
      std::copy_n(tail_.begin() + std::ptrdiff_t(from), std::size_t(n), dst);
      dst += n, pos += n, bytes -= n;
      if (bytes == 0) return;
    }
    if (pos < position_) restart();
    std::vector<unsigned char> skip;
    while (position_ < pos) {
      skip.resize(std::size_t(std::min<std::uint64_t>(pos - position_, 1 << 20)));
      inflate_into(skip.data(), skip.size());
      tail_.clear();
    }
    const unsigned char* first = dst;
    const std::uint64_t total = bytes;
    while (bytes > 0) {
      const auto chunk = std::size_t(std::min<std::uint64_t>(bytes, 1u << 30));
      inflate_into(dst, chunk);
      dst += chunk;
      bytes -= chunk;
    }
    keep_tail(first, total);
  }

 private:
  void restart() {
    if (started_) inflateEnd(&z_);
    z_ = z_stream{};
    if (inflateInit2(&z_, 15 + 32) != Z_OK) throw Error(ErrorKind::OutOfMemory, "zlib: cannot start inflating");
    started_ = true;
    if (fseeko(file_, off_t(offset_), SEEK_SET) != 0)
      throw Error(ErrorKind::Io, "'" + path_ + "': cannot seek to the compressed data");
    position_ = 0;
    ended_ = false;
    tail_.clear();
  }
  // The tail is the end of the last read (slabs overlap the slab before by less than one read).
  void keep_tail(const unsigned char* data, std::uint64_t n) {
    const std::uint64_t kept = std::min(n, kTail);
    tail_.assign(data + (n - kept), data + n);
  }
  void inflate_into(unsigned char* dst, std::size_t bytes) {
    z_.next_out = dst;
    z_.avail_out = uInt(bytes);
    while (z_.avail_out > 0) {
      if (ended_) short_data(bytes);
      if (z_.avail_in == 0) {
        const std::size_t got = std::fread(in_.data(), 1, in_.size(), file_);
        if (got == 0) short_data(bytes);
        z_.next_in = in_.data();
        z_.avail_in = uInt(got);
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        ended_ = !next_gzip_member();
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw Error(ErrorKind::Parse, "'" + path_ + "': corrupt compressed data (zlib: " +
                                          std::string(z_.msg ? z_.msg : "error " + std::to_string(rc)) + ")");
      }
    }
    position_ += bytes;
  }
  // After the end of a gzip member: whether another follows (then inflation goes on with it).
  bool next_gzip_member() {
    if (z_.avail_in < 2) {
      if (z_.avail_in == 1) in_[0] = *z_.next_in;
      const std::size_t got = std::fread(in_.data() + z_.avail_in, 1, in_.size() - z_.avail_in, file_);
      z_.next_in = in_.data();
      z_.avail_in += uInt(got);
    }
    if (z_.avail_in < 2 || z_.next_in[0] != 0x1f || z_.next_in[1] != 0x8b) return false;
    return inflateReset(&z_) == Z_OK;
  }
  [[noreturn]] void short_data(std::size_t wanted) const {
    throw Error(ErrorKind::Parse, "'" + path_ + "': compressed data ends early (at uncompressed byte " +
                                      std::to_string(position_ + wanted - z_.avail_out) + ")");
  }

  std::string path_;
  std::uint64_t offset_, skip_;
  std::FILE* file_ = nullptr;
  z_stream z_{};
  bool started_ = false, ended_ = false;
  std::uint64_t position_ = 0;
  std::vector<unsigned char> in_;
  static constexpr std::uint64_t kTail = std::uint64_t(64) << 20;
  std::vector<unsigned char> tail_;
};

}  // namespace parasurf::io
