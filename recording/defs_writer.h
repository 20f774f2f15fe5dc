// The definitions file of a recording process (raw/defs-R.jsonl for an MPI rank,
// raw/pvm/task-<tid>.jsonl for a PVM task): JSON lines appended while the process runs.
//
// Why one write(2) per line on an O_APPEND file: a crash never leaves half a line behind
// another, so the offline readers can drop at most a cut last line.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace invmw::recording {

class DefsWriter {
 public:
  // Takes over fd (opened for appending). errors (optional) counts failed writes.
  void Attach(int fd, std::atomic<uint64_t>* errors);
  bool open() const { return fd_ >= 0; }
  // Appends line and a newline, in one write, from any thread. Nothing without a file.
  void Line(const std::string& line);
  // The same from a signal handler: no allocation, and the lock only if it is free (the
  // interrupted thread may hold it). The caller's buffer holds the line with its newline.
  void LineFromSignal(const char* line_with_newline, size_t n);
  void Close();

 private:
  void Count();
  std::mutex mutex_;
  int fd_ = -1;
  std::atomic<uint64_t>* errors_ = nullptr;
};

}  // namespace invmw::recording
