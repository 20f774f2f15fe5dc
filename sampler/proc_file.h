// A kernel text file kept open and re-read from offset 0 at every sample.
//
// Why: opening /proc files costs more than reading them; seq_file-backed files regenerate
// their content on a read at offset 0, so one descriptor per file serves the whole run. The
// read that would return 0 at the end is skipped when it cannot find more: it makes the kernel
// generate the whole file again (half the sampler's /proc time), and a seq_file read stops
// short of the end only when its next record would not fit in a page-sized buffer, so a first
// read shorter than kShortEnough (no record is that long) has returned everything.
// The buffer belongs to the file and is only written by read(): zero-filling a std::string up
// to its capacity before each read was half of the sampler's own instructions.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>

namespace invmw::sampler {

class ProcFile {
 public:
  ProcFile() = default;
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;
  ~ProcFile() {
    if (fd_ >= 0) close(fd_);
  }
  bool Open(const std::string& path) {
    path_ = path;
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    return fd_ >= 0;
  }
  // The whole content, valid until the next Read and followed by a '\0'; false on a read error
  // or an empty file.
  bool Read(std::string_view* out) {
    if (fd_ < 0) return false;
    if (!buf_) buf_.reset(new char[size_ + 1]);
    size_t got = 0;
    while (true) {
      const size_t want = size_ - got;
      const bool first = got == 0;
      const ssize_t n = pread(fd_, buf_.get() + got, want, off_t(got));
      if (n < 0) return false;
      got += size_t(n);
      if (n == 0 || (first && size_t(n) < want && size_t(n) < kShortEnough)) break;
      if (got == size_) Grow();
    }
    buf_[got] = '\0';
    *out = std::string_view(buf_.get(), got);
    return got > 0;
  }
  const std::string& path() const { return path_; }

 private:
  void Grow() {
    std::unique_ptr<char[]> bigger(new char[2 * size_ + 1]);
    std::copy(buf_.get(), buf_.get() + size_, bigger.get());
    buf_ = std::move(bigger);
    size_ *= 2;
  }
  static constexpr size_t kShortEnough = 2048;
  int fd_ = -1;
  size_t size_ = 4096;
  std::unique_ptr<char[]> buf_;
  std::string path_;
};

// Reads a whole small file once (cgroup settings, /proc/self/cgroup).
inline bool ReadSmallFile(const std::string& path, std::string* out) {
  ProcFile f;
  std::string_view v;
  if (!f.Open(path) || !f.Read(&v)) return false;
  out->assign(v);
  return true;
}

}  // namespace invmw::sampler
