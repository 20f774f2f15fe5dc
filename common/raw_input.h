// Opening and reading the files of a run directory (raw/ above all) without trusting them.
//
// Why: raw/ is written by the ranks of a job that may have crashed, and anybody may have left
// anything there: copies ("rank-000000 copy.bin"), directories, device nodes, FIFOs, symbolic
// links. A reader must not hang (open(2) and read(2) of a FIFO without a writer block), follow a
// link elsewhere, read without bound (/dev/zero, a sparse file of a terabyte) or abort. These
// functions look at the entry with lstat(2) first, open only regular files (O_NOFOLLOW |
// O_NONBLOCK, then fstat(2) to be sure it is still the same regular file), and read at most the
// size fstat reported, bounded by the caller. Errors say what the entry is ("a FIFO", "a
// directory") or what failed; the caller prefixes the file name.
//
// Header-only so that the preload runtime, the profile merge and the trace readers share it
// without another library.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace invmw::rawio {

// The largest world size a raw file may claim. Readers allocate per world rank (missing-rank
// lists, empty locations), so a corrupt header must not make them allocate 2^31 entries.
constexpr int32_t kMaxWorldSize = 1 << 24;

inline const char* FileTypeName(mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link (not followed)";
  return "not a regular file";
}

// Opens path for reading if it is a regular file of at most max_bytes; returns the descriptor
// (close it) and its size, or -1 with *error.
inline int OpenRegularFile(const std::string& path, uint64_t max_bytes, uint64_t* size,
                           std::string* error) {
  struct stat ls;
  if (lstat(path.c_str(), &ls) != 0) {
    *error = std::strerror(errno);
    return -1;
  }
  if (!S_ISREG(ls.st_mode)) {
    *error = std::string("is ") + FileTypeName(ls.st_mode) + ", not a regular file";
    return -1;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = errno == ELOOP ? "is a symbolic link (not followed)" : std::strerror(errno);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != ls.st_dev ||
      st.st_ino != ls.st_ino) {
    *error = "changed while being opened (not a regular file now)";
    close(fd);
    return -1;
  }
  if (uint64_t(st.st_size) > max_bytes) {
    *error = std::to_string(uint64_t(st.st_size)) + " bytes, more than the " +
             std::to_string(max_bytes) + "-byte limit for this file";
    close(fd);
    return -1;
  }
  *size = uint64_t(st.st_size);
  return fd;
}

// Reads n bytes at offset; a file that shrank meanwhile is an error (said in *error when
// given; callers that word their own errors pass none).
inline bool ReadAt(int fd, void* buf, size_t n, uint64_t offset, std::string* error = nullptr) {
  char* p = static_cast<char*>(buf);
  while (n) {
    const ssize_t r = pread(fd, p, n, off_t(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      if (error) *error = std::string("read failed: ") + std::strerror(errno);
      return false;
    }
    if (r == 0) {
      if (error) *error = "shrank while being read";
      return false;
    }
    p += r, n -= size_t(r), offset += uint64_t(r);
  }
  return true;
}

// The whole content of a regular file of at most max_bytes (what fstat reported at open; data
// appended meanwhile is not read).
inline bool ReadRegularFile(const std::string& path, uint64_t max_bytes, std::string* data,
                            std::string* error) {
  uint64_t size = 0;
  const int fd = OpenRegularFile(path, max_bytes, &size, error);
  if (fd < 0) return false;
  try {
    data->resize(size);
  } catch (const std::exception&) {
    *error = std::to_string(size) + " bytes do not fit in memory";
    close(fd);
    return false;
  }
  const bool ok = ReadAt(fd, data->data(), size, 0, error);
  close(fd);
  return ok;
}

// The number in a file name field of at least min_digits decimal digits, accepted only in the
// form the writer prints it ("%0<min_digits>d": no sign, no extra leading zeros) and within
// [0, INT32_MAX]. "000007" -> 7 (min_digits 6); "7", "0000007", "+00007", "" -> false.
inline bool ParseNameNumber(std::string_view s, size_t min_digits, int32_t* out) {
  if (s.size() < min_digits || s.size() > 10) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v > INT32_MAX) return false;
  if (s.size() > min_digits && s[0] == '0') return false;
  *out = int32_t(v);
  return true;
}

}  // namespace invmw::rawio
