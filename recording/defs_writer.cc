#include "recording/defs_writer.h"

#include <unistd.h>

namespace invmw::recording {

void DefsWriter::Attach(int fd, std::atomic<uint64_t>* errors) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
  errors_ = errors;
}

void DefsWriter::Count() {
  if (errors_) errors_->fetch_add(1, std::memory_order_relaxed);
}

void DefsWriter::Line(const std::string& line) {
  std::string s = line + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return;
  if (write(fd_, s.data(), s.size()) != ssize_t(s.size())) Count();
}

void DefsWriter::LineFromSignal(const char* line_with_newline, size_t n) {
  const bool locked = mutex_.try_lock();
  if (fd_ >= 0 && write(fd_, line_with_newline, n) != ssize_t(n)) Count();
  if (locked) mutex_.unlock();
}

void DefsWriter::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace invmw::recording
