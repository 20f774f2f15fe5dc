#include "common/file_io.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace invmw {

void WriteFileAtomic(const std::string& path, const std::string& text, mode_t mode) {
  static std::atomic<unsigned> counter{0};
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) throw FileError(path + ": cannot write: not a file name");
  // Same directory, so rename() is atomic; hidden and unique, so nothing else uses the name.
  std::string tmp = dir + "." + base + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(counter.fetch_add(1));
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw FileError(path + ": cannot write: " + std::strerror(errno));
  auto fail = [&](int err) {
    unlink(tmp.c_str());  // created above by this function
    throw FileError(path + ": cannot write: " + std::strerror(err));
  };
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      close(fd);
      fail(err);
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    int err = errno;
    close(fd);
    fail(err);
  }
  if (close(fd) != 0) fail(errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(errno);
}

}  // namespace invmw
