#include "experiments/runner/run_dirs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace invmw::experiment {

const char kOwnerMarker[] = ".invmw-runner-owned";

namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(Fd&& o) : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::string Errno() {
  return std::strerror(errno);
}

// A directory entry as a directory, never through a symbolic link (ELOOP/ENOTDIR otherwise).
Fd OpenDirAt(int parent, const std::string& name) {
  return Fd(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

bool HasMarker(int dir) {
  struct stat st;
  return fstatat(dir, kOwnerMarker, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

void WriteMarker(int dir, const std::string& path) {
  int fd = openat(dir, kOwnerMarker, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(path + "/" + kOwnerMarker +
                             ": cannot create the ownership marker: " + Errno());
  static const char kText[] =
      "Created by `invmw experiment run`; `invmw experiment reset` may delete this directory.\n";
  bool ok = write(fd, kText, sizeof kText - 1) == static_cast<ssize_t>(sizeof kText - 1);
  ok = close(fd) == 0 && ok;
  if (!ok)
    throw std::runtime_error(path + "/" + kOwnerMarker +
                             ": cannot write the ownership marker: " + Errno());
}

// Names in a directory, without "." and "..".
std::vector<std::string> Entries(int dir, const std::string& path) {
  int dup = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  DIR* d = dup >= 0 ? fdopendir(dup) : nullptr;
  if (!d) {
    if (dup >= 0) close(dup);
    throw std::runtime_error(path + ": cannot list: " + Errno());
  }
  rewinddir(d);
  std::vector<std::string> out;
  while (struct dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  return out;
}

// Deletes everything inside `dir`. A symbolic link is removed itself, never followed.
void EmptyDir(int dir, const std::string& path) {
  for (const std::string& name : Entries(dir, path)) {
    std::string p = path + "/" + name;
    struct stat st;
    if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      throw std::runtime_error(p + ": " + Errno());
    if (S_ISDIR(st.st_mode)) {
      Fd child = OpenDirAt(dir, name);
      if (!child.ok()) throw std::runtime_error(p + ": cannot open: " + Errno());
      EmptyDir(child.get(), p);
      if (unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0)
        throw std::runtime_error(p + ": cannot remove: " + Errno());
    } else if (unlinkat(dir, name.c_str(), 0) != 0) {
      throw std::runtime_error(p + ": cannot remove: " + Errno());
    }
  }
}

void RequireName(const std::string& what, const std::string& name) {
  if (std::string why = CheckPathName(name); !why.empty())
    throw std::runtime_error(what + " '" + name + "': " + why);
}

}  // namespace

std::string CheckPathName(const std::string& name) {
  if (name.empty()) return "empty name";
  if (name == "." || name == "..") return "not a name (it is a directory reference)";
  if (name.size() > 128) return "longer than 128 characters";
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return "not a plain name (allowed: letters, digits, '.', '_', '-'; no '/')";
  return "";
}

std::string MakeRunDir(const std::string& runs_dir, const std::string& design,
                       const std::string& platform, const std::string& run) {
  RequireName("design", design);
  RequireName("platform", platform);
  RequireName("run directory", run);
  std::error_code ec;
  std::filesystem::create_directories(runs_dir, ec);  // the root is the user's choice
  Fd at(open(runs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!at.ok()) throw std::runtime_error(runs_dir + ": cannot open the runs directory: " + Errno());
  std::string path = runs_dir;
  const std::string levels[] = {design, platform, run};
  for (int i = 0; i < 3; ++i) {
    const std::string& name = levels[i];
    path += "/" + name;
    bool made = mkdirat(at.get(), name.c_str(), 0755) == 0;
    if (!made && errno != EEXIST) throw std::runtime_error(path + ": cannot create: " + Errno());
    Fd dir = OpenDirAt(at.get(), name);
    if (!dir.ok())
      throw std::runtime_error(path + ": " +
                               (errno == ELOOP || errno == ENOTDIR
                                    ? std::string("a symbolic link or not a directory; the "
                                                  "runner does not follow or replace it")
                                    : "cannot open: " + Errno()));
    if (made) {
      WriteMarker(dir.get(), path);
    } else if (i == 2) {
      // A failed or interrupted earlier attempt of this run: emptied only when the runner made
      // it (or it is empty anyway).
      bool marked = HasMarker(dir.get());
      if (!marked && !Entries(dir.get(), path).empty())
        throw std::runtime_error(path + ": exists and was not made by the runner (no " +
                                 std::string(kOwnerMarker) +
                                 "); move it away or choose another --runs-dir");
      EmptyDir(dir.get(), path);
      WriteMarker(dir.get(), path);
    }
    at = std::move(dir);
  }
  return path;
}

RemoveReport RemoveRunDirs(const std::string& runs_dir, const std::string& design,
                           const std::string& platform) {
  RequireName("design", design);
  RequireName("platform", platform);
  RemoveReport rep;
  Fd root(open(runs_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) {
    if (errno != ENOENT) rep.kept.push_back(runs_dir + ": cannot open: " + Errno());
    return rep;
  }
  auto open_level = [&](int parent, const std::string& name, const std::string& path) {
    Fd fd = OpenDirAt(parent, name);
    if (!fd.ok() && errno != ENOENT)
      rep.kept.push_back(path + ": " +
                         (errno == ELOOP || errno == ENOTDIR
                              ? std::string("a symbolic link or not a directory; not followed")
                              : Errno()));
    return fd;
  };
  std::string dpath = runs_dir + "/" + design, ppath = dpath + "/" + platform;
  Fd d = open_level(root.get(), design, dpath);
  if (!d.ok()) return rep;
  Fd p = open_level(d.get(), platform, ppath);
  if (!p.ok()) return rep;
  if (!HasMarker(p.get())) {
    rep.kept.push_back(ppath + ": not made by `invmw experiment run` (no " +
                       std::string(kOwnerMarker) + "); left alone");
    return rep;
  }
  size_t kept_before = rep.kept.size();
  for (const std::string& name : Entries(p.get(), ppath)) {
    if (name == kOwnerMarker) continue;
    std::string path = ppath + "/" + name;
    struct stat st = {};
    if (fstatat(p.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
      rep.kept.push_back(
          path + ": not a run directory (" +
          (S_ISLNK(st.st_mode) ? "a symbolic link, not followed" : "not a directory") +
          "); left alone");
      continue;
    }
    Fd run = OpenDirAt(p.get(), name);
    if (!run.ok() || !HasMarker(run.get())) {
      rep.kept.push_back(path + ": not made by `invmw experiment run` (no " +
                         std::string(kOwnerMarker) + "); left alone");
      continue;
    }
    EmptyDir(run.get(), path);
    if (unlinkat(p.get(), name.c_str(), AT_REMOVEDIR) != 0)
      throw std::runtime_error(path + ": cannot remove: " + Errno());
    ++rep.removed;
  }
  if (rep.kept.size() != kept_before) return rep;
  // Only the marker is left: the platform directory goes, and the design's when it is empty.
  if (unlinkat(p.get(), kOwnerMarker, 0) != 0)
    throw std::runtime_error(ppath + ": cannot remove: " + Errno());
  if (unlinkat(d.get(), platform.c_str(), AT_REMOVEDIR) != 0) {
    std::string why = Errno();
    WriteMarker(p.get(), ppath);  // something appeared meanwhile: the directory stays ours
    throw std::runtime_error(ppath + ": cannot remove: " + why);
  }
  std::vector<std::string> rest = Entries(d.get(), dpath);
  if (rest.size() == 1 && rest[0] == kOwnerMarker && HasMarker(d.get())) {
    if (unlinkat(d.get(), kOwnerMarker, 0) != 0 ||
        unlinkat(root.get(), design.c_str(), AT_REMOVEDIR) != 0)
      throw std::runtime_error(dpath + ": cannot remove: " + Errno());
  }
  return rep;
}

}  // namespace invmw::experiment
