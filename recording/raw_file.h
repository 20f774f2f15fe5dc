// A process's raw dump (common/raw_format.h): a buffer and a file both prepared at start-up,
// written once by whichever end of the process comes first (finalize, exit, abort, signal).
//
// Why prepared up front: the abnormal ends run in signal handlers, where nothing may be
// allocated or opened; Save only copies the caller's filled buffer out with pwrite(2) (and
// renames), which is async-signal-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace invmw::recording {

class RawFile {
 public:
  RawFile() = default;
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;

  // The buffer the dump is built in (zeroed). False when there is no memory for it.
  bool Allocate(size_t capacity);
  char* buffer() const { return buf_; }
  size_t capacity() const { return cap_; }
  void Release();  // the buffer only; the file stays as it is

  // Takes over fd, an open file for the dump. final_path empty: the dump is written in place
  // (a file created new at start-up, common/run_dir.h). Otherwise fd is a temporary file that
  // Commit renames to final_path, so that a reader takes a present file as complete.
  void Attach(int fd, const std::string& tmp_path = "", const std::string& final_path = "");
  bool has_file() const { return fd_ >= 0; }

  // Whichever end comes first claims the dump: true for the first caller only.
  bool Claim() { return !claimed_.exchange(true); }
  bool claimed() const { return claimed_.load(); }

  // Writes the first n bytes of the buffer at the file's start. False when no file or a failed
  // write. Async-signal-safe.
  bool Write(size_t n);
  // Renames the temporary file to its final name (when Attach gave one). Async-signal-safe.
  bool Commit();
  void Close();

 private:
  char* buf_ = nullptr;
  size_t cap_ = 0;
  int fd_ = -1;
  std::string tmp_path_, final_path_;
  std::atomic<bool> claimed_{false};
};

}  // namespace invmw::recording
