// A kernel text file kept open and re-read from offset 0 at every sample.
//
// Why: opening /proc files costs more than reading them; seq_file-backed files regenerate
// their content on a read at offset 0, so one descriptor per file serves the whole run. The
// read that would return 0 at the end is skipped when it cannot find more: it makes the kernel
// generate the whole file again (half the sampler's /proc time), and a seq_file read stops
// short of the end only when its next record would not fit in a page-sized buffer, so a first
// read shorter than kShortEnough (no record is that long) has returned everything.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

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
  // The whole content into *out (reused buffer); false on a read error.
  bool Read(std::string* out) {
    if (fd_ < 0) return false;
    out->resize(buf_size_);
    size_t got = 0;
    while (true) {
      const size_t want = out->size() - got;
      const bool first = got == 0;
      ssize_t n = pread(fd_, &(*out)[got], want, off_t(got));
      if (n < 0) return false;
      got += size_t(n);
      if (n == 0 || (first && size_t(n) < want && size_t(n) < kShortEnough)) break;
      if (got == out->size()) {
        buf_size_ *= 2;
        out->resize(buf_size_);
      }
    }
    out->resize(got);
    return got > 0;
  }
  const std::string& path() const { return path_; }

 private:
  static constexpr size_t kShortEnough = 2048;
  int fd_ = -1;
  size_t buf_size_ = 4096;
  std::string path_;
};

// Reads a whole small file once (cgroup settings, /proc/self/cgroup).
inline bool ReadSmallFile(const std::string& path, std::string* out) {
  ProcFile f;
  return f.Open(path) && f.Read(out);
}

}  // namespace invmw::sampler
