#pragma once
// A "live" file: a sparse file mapping MAP_SHARED that a rank updates in place, so that what it
// holds survives a SIGKILL (raw/live-N.bin for the per-thread counters, callsites/live-N.bin for
// the call-site tables). Both are made the same way: created exclusively (never another's file),
// given blocks only for their header now (a store into a hole the file system cannot fill
// would be SIGBUS; slots get theirs when a thread takes one), and mapped whole.
#include <cerrno>
#include <cstdint>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace invmw::recording {

struct LiveFile {
  void* base = nullptr;  // the mapping of the whole file
  int fd = -1;           // kept open to reserve slots' blocks later (posix_fallocate)
};

enum class LiveFileError { kNone, kExists, kCreate, kMap };

// Creates PATH with SIZE bytes, blocks for its first RESERVED bytes, and maps it. On kMap the
// file is removed again; *err is the errno of what failed (kCreate, kMap).
inline LiveFileError CreateLiveFile(const char* path, uint64_t size, uint64_t reserved,
                                    LiveFile* out, int* err) {
  *err = 0;
  const int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = errno;
    return *err == EEXIST ? LiveFileError::kExists : LiveFileError::kCreate;
  }
  void* m = MAP_FAILED;
  int e = ftruncate(fd, off_t(size)) == 0 ? 0 : errno;
  if (e == 0) e = posix_fallocate(fd, 0, off_t(reserved));  // returns the error
  if (e == 0) {
    m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) e = errno;
  }
  if (m == MAP_FAILED) {
    *err = e;
    unlink(path);
    close(fd);
    return LiveFileError::kMap;
  }
  out->base = m;
  out->fd = fd;
  return LiveFileError::kNone;
}

// Both files' layout: the header, then a 48-byte name per function (up to 47 characters and a
// NUL), then the slots from the next page on. Returns the names' offset and the slots'.
inline void LiveFileLayout(uint64_t header_size, int num_funcs, uint64_t* names_off,
                           uint64_t* slots_off) {
  *names_off = header_size;
  *slots_off = (header_size + uint64_t(num_funcs) * 48 + 4095) & ~uint64_t(4095);
}
inline void WriteLiveNames(void* base, uint64_t names_off, const char* const* names, int n) {
  char* out = static_cast<char*>(base) + names_off;
  for (int f = 0; f < n; ++f) {
    size_t len = 0;
    while (len < 47 && names[f][len]) ++len;
    for (size_t i = 0; i < len; ++i) out[48 * f + i] = names[f][i];
    out[48 * f + len] = '\0';
  }
}

// Readers take the slots below *slots_used; slot idx joins them (a slot is zero until its
// thread counts, so one taken early is read as empty).
inline void MarkLiveSlotUsed(uint32_t* slots_used, int idx) {
  uint32_t used = __atomic_load_n(slots_used, __ATOMIC_RELAXED);
  while (used < uint32_t(idx + 1) &&
         !__atomic_compare_exchange_n(slots_used, &used, uint32_t(idx + 1), false, __ATOMIC_RELEASE,
                                      __ATOMIC_RELAXED)) {
  }
}

}  // namespace invmw::recording
