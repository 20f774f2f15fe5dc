// Whether an executable has libpvm3 linked in statically (libpvm3.a, or libfpvm3, which exists
// only as a static library). Shared by the preload, which then warns that it cannot observe the
// program, and by `invmw run`, which must pick the PVM preload for such a program although
// ldd shows no libpvm3.
//
// The test is two strings that every libpvm3 build carries (its message prefix and the name of
// the variable it reads at enrolment); a program without libpvm3 in it does not carry both.
// A program linked with the shared libpvm3 does not carry them either: they stay in the .so.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace invmw::pvm {

inline bool HasStaticPvm(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool found = false;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void* p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      static const char kMarkA[] = "libpvm [t%x]";
      static const char kMarkB[] = "PVM_EXPORT";
      found = memmem(p, size_t(st.st_size), kMarkA, sizeof kMarkA - 1) &&
              memmem(p, size_t(st.st_size), kMarkB, sizeof kMarkB - 1);
      munmap(p, size_t(st.st_size));
    }
  }
  close(fd);
  return found;
}

}  // namespace invmw::pvm
