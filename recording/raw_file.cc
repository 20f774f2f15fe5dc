#include "recording/raw_file.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "recording/io.h"

namespace invmw::recording {

bool RawFile::Allocate(size_t capacity) {
  Release();
  buf_ = static_cast<char*>(std::calloc(1, capacity));
  cap_ = buf_ ? capacity : 0;
  return buf_ != nullptr;
}

void RawFile::Release() {
  std::free(buf_);
  buf_ = nullptr;
  cap_ = 0;
}

void RawFile::Attach(int fd, const std::string& tmp_path, const std::string& final_path) {
  Close();
  fd_ = fd;
  tmp_path_ = tmp_path;
  final_path_ = final_path;
}

bool RawFile::Write(size_t n) {
  if (fd_ < 0 || !buf_ || n > cap_) return false;
  return WriteAllAt(fd_, buf_, n, 0);
}

bool RawFile::Commit() {
  if (final_path_.empty()) return true;
  return std::rename(tmp_path_.c_str(), final_path_.c_str()) == 0;
}

void RawFile::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace invmw::recording
