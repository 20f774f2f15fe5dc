#include "otf2_writer/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace invmw::otf2 {
namespace fs = std::filesystem;

namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

// The three entries of an archive, in the order they are renamed aside (anchor first); they
// are renamed in in the opposite order (anchor last).
std::vector<std::string> Parts(const std::string& dir, const std::string& name) {
  return {dir + "/" + name + ".otf2", dir + "/" + name + ".def", dir + "/" + name};
}

void RemoveParts(const std::string& dir, const std::string& name) {
  for (const auto& p : Parts(dir, name)) {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
}

// A name none of whose parts exists in dir.
std::string FreeName(const std::string& dir, const std::string& base) {
  for (int k = 0;; ++k) {
    const std::string n = base + "-" + std::to_string(getpid()) + "-" + std::to_string(k);
    bool free = true;
    for (const auto& p : Parts(dir, n)) free &= !Exists(p);
    if (free) return n;
  }
}

std::string Errno() {
  return std::strerror(errno);
}

}  // namespace

bool ArchiveExists(const std::string& dir, const std::string& name) {
  for (const auto& p : Parts(dir, name))
    if (Exists(p)) return true;
  return false;
}

TempArchive::TempArchive(const std::string& dir, const std::string& final_name)
    : dir_(dir), final_(final_name), name_(FreeName(dir, "." + final_name + ".writing")) {}

TempArchive::~TempArchive() {
  if (!moved_) RemoveParts(dir_, name_);
}

std::string TempArchive::Replace() {
  const std::vector<std::string> fin = Parts(dir_, final_), tmp = Parts(dir_, name_);
  const std::string old_name = FreeName(dir_, "." + final_ + ".old");
  const std::vector<std::string> old = Parts(dir_, old_name);
  std::vector<size_t> aside, in;  // parts renamed so far, to undo on failure
  auto undo = [&] {
    for (size_t i : in) std::rename(fin[i].c_str(), tmp[i].c_str());
    for (size_t i : aside) std::rename(old[i].c_str(), fin[i].c_str());
  };
  for (size_t i = 0; i < fin.size(); ++i) {
    if (!Exists(fin[i])) continue;
    if (std::rename(fin[i].c_str(), old[i].c_str()) != 0) {
      const std::string why = Errno();
      undo();
      throw std::runtime_error(fin[i] + ": cannot be replaced (rename to " + old[i] +
                               " failed: " + why + ")");
    }
    aside.push_back(i);
  }
  for (size_t i = fin.size(); i-- > 0;) {
    if (!Exists(tmp[i])) continue;
    if (std::rename(tmp[i].c_str(), fin[i].c_str()) != 0) {
      const std::string why = Errno();
      undo();
      throw std::runtime_error(fin[i] + ": cannot be written (rename from " + tmp[i] +
                               " failed: " + why + ")");
    }
    in.push_back(i);
  }
  moved_ = true;
  std::string warning;
  for (size_t i : aside) {
    std::error_code ec;
    fs::remove_all(old[i], ec);
    if (ec)
      warning += (warning.empty() ? "" : "; ") + old[i] +
                 ": the replaced archive's entry could not be removed (" + ec.message() + ")";
  }
  return warning;
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  for (int k = 0; !file_; ++k) {
    tmp_ = path + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(k);
    const int fd = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) throw std::runtime_error(path + ": cannot be written (" + Errno() + ")");
    file_ = fdopen(fd, "w");
    if (!file_) {
      const std::string why = Errno();
      close(fd);
      unlink(tmp_.c_str());
      throw std::runtime_error(path + ": cannot be written (" + why + ")");
    }
  }
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!tmp_.empty()) unlink(tmp_.c_str());
}

void AtomicFile::Commit() {
  std::string why;
  if (std::fflush(file_) != 0 || std::ferror(file_))
    why = Errno();
  else if (fsync(fileno(file_)) != 0 && errno != EINVAL)
    why = Errno();
  FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0 && why.empty()) why = Errno();
  if (why.empty() && std::rename(tmp_.c_str(), path_.c_str()) != 0) why = Errno();
  if (!why.empty()) throw std::runtime_error(path_ + ": not written (" + why + ")");
  tmp_.clear();
}

void RefuseArchiveOverwrite(const std::string& anchor, const std::string& out) {
  // NAME.def and NAME/ belong to the anchor NAME.otf2; any other path is compared as itself.
  std::string stem;
  if (anchor.size() > 5 && anchor.compare(anchor.size() - 5, 5, ".otf2") == 0)
    stem = anchor.substr(0, anchor.size() - 5);
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(out, ec);
  auto refuse = [&](const std::string& what) {
    throw std::runtime_error(out + ": is " + what +
                             ", a file of the trace being exported; choose another -o");
  };
  std::vector<std::string> files = {anchor};
  if (!stem.empty()) files.push_back(stem + ".def");
  for (const auto& f : files) {
    std::error_code e2;
    if (!ec && fs::weakly_canonical(f, e2) == target && !e2) refuse(f);
  }
  std::error_code e3;
  const fs::path events = stem.empty() ? fs::path() : fs::weakly_canonical(stem, e3);
  if (!stem.empty() && !ec && !e3) {
    // Inside NAME/ (or NAME/ itself): compare path components.
    auto t = target.begin();
    bool inside = true;
    for (auto e = events.begin(); e != events.end(); ++e, ++t)
      if (t == target.end() || *t != *e) {
        inside = false;
        break;
      }
    if (inside) refuse(stem + "/");
  }
  // The same file under another name (hard link, bind mount): device and inode.
  struct stat so;
  if (stat(out.c_str(), &so) != 0) return;
  auto same = [&](const std::string& p) {
    struct stat s;
    return stat(p.c_str(), &s) == 0 && s.st_dev == so.st_dev && s.st_ino == so.st_ino;
  };
  for (const auto& f : files)
    if (same(f)) refuse(f);
  if (stem.empty()) return;
  std::error_code e4;
  for (fs::recursive_directory_iterator it(stem, e4), end; !e4 && it != end; it.increment(e4))
    if (same(it->path().string())) refuse(it->path().string());
}

}  // namespace invmw::otf2
