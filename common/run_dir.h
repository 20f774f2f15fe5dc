// The experiment directory, shared by the runtime (plain LD_PRELOAD runs, where rank 0 chooses
// it) and `invmw run`: its default name, how an earlier run's directory is recognised and
// replaced, and how invmw creates its files there.
//
// invmw never writes through an entry it finds at one of its file names: another user with
// write access to the directory could have planted a link to a file of theirs (or of root's).
// Files are created with O_CREAT|O_EXCL|O_NOFOLLOW, or written to such a temporary file and
// linked into place without replacing anything.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "common/clock.h"

namespace invmw {

// invmw-YYYYMMDD-HHMMSS-<id>, UTC; the id tells apart runs started in the same second.
inline std::string DefaultRunDirName() {
  time_t now = time(nullptr);
  struct tm tmv;
  gmtime_r(&now, &tmv);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tmv);
  unsigned id = unsigned(clock::Ticks() ^ (uint64_t(getpid()) << 16)) & 0xffffff;
  char out[64];
  std::snprintf(out, sizeof out, "invmw-%s-%06x", stamp, id);
  return out;
}

// A new file of invmw's: fails (EEXIST) when anything is at path already, a link included.
inline int CreateNewFile(const std::string& path, int extra_flags = 0) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_flags,
              0644);
}

// Gives the finished temporary file tmp the name path, unless something has that name already
// (then false, errno EEXIST, and tmp is removed). A hard link is atomic and never replaces;
// where the file system has none, a rename after checking is the fallback.
inline bool PublishNewFile(const std::string& tmp, const std::string& path) {
  if (link(tmp.c_str(), path.c_str()) == 0) {
    unlink(tmp.c_str());
    return true;
  }
  int err = errno;
  if (err != EEXIST) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 && errno == ENOENT) {
      if (rename(tmp.c_str(), path.c_str()) == 0) return true;
      err = errno;
    } else {
      err = EEXIST;
    }
  }
  unlink(tmp.c_str());
  errno = err;
  return false;
}

// Entries that make a directory the directory of a run (README.md, "Output directory").
inline const char* const kRunDirMarkers[] = {"meta.json", "profile.json", "raw", "traces.otf2",
                                             "traces"};

// The markers present in dir (links count as present): non-empty = an earlier run's directory.
inline std::vector<std::string> EarlierRunEntries(const std::string& dir) {
  std::vector<std::string> found;
  struct stat st;
  for (const char* m : kRunDirMarkers)
    if (lstat((dir + "/" + m).c_str(), &st) == 0) found.push_back(m);
  return found;
}

namespace run_dir_detail {

// rank-000003.bin, events-000003-001.bin, defs-000003.jsonl, metrics-000003.jsonl,
// samples-000003.bin, resources-000003.json, live-000003.bin, profile-000003.json (the tree
// merge's per-rank profile), and temporaries of these
// (name.tmp...).
inline bool IsRawFileName(const std::string& n) {
  static const char* const kPrefixes[] = {"rank-",    "events-",    "defs-", "metrics-",
                                          "samples-", "resources-", "live-", "profile-"};
  static const char* const kSuffixes[] = {".bin", ".jsonl", ".json"};
  for (const char* p : kPrefixes) {
    if (n.compare(0, std::strlen(p), p) != 0) continue;
    size_t i = std::strlen(p), digits = 0;
    while (i < n.size() && (std::isdigit(static_cast<unsigned char>(n[i])) || n[i] == '-'))
      ++i, ++digits;
    if (digits == 0) return false;
    for (const char* s : kSuffixes) {
      const size_t l = std::strlen(s);
      if (n.compare(i, l, s) != 0) continue;
      const std::string rest = n.substr(i + l);
      if (rest.empty() || rest.compare(0, 4, ".tmp") == 0) return true;
    }
    return false;
  }
  return false;
}

// The per-rank call-site files: callsites/rank-000003.txt and the live tables
// callsites/live-000003.bin (pmpi_wrap, docs/callsites.md).
inline bool IsCallSiteFileName(const std::string& n) {
  const bool live = n.compare(0, 5, "live-") == 0;
  if ((!live && n.compare(0, 5, "rank-") != 0) || n.size() < 10) return false;
  size_t i = 5;
  while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i]))) ++i;
  return i > 5 && n.substr(i) == (live ? ".bin" : ".txt");
}

// An OTF2 archive's per-location files: traces/<location>.evt and .def.
inline bool IsArchiveFileName(const std::string& n) {
  const size_t dot = n.find('.');
  if (dot == 0 || dot == std::string::npos) return false;
  for (size_t i = 0; i < dot; ++i)
    if (!std::isdigit(static_cast<unsigned char>(n[i]))) return false;
  return n.substr(dot) == ".evt" || n.substr(dot) == ".def";
}

// The files of subdirectory sub of dir, which must all be invmw's (*ok), into *names; problems
// (a link or non-directory in sub's place, a file invmw did not write) into *problems.
inline void ListOwnFiles(const std::string& dir, const char* sub, bool (*ok)(const std::string&),
                         std::vector<std::string>* names, std::vector<std::string>* problems) {
  const std::string path = dir + "/" + sub;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    problems->push_back(std::string(sub) + " is not a directory");
    return;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR* d = fd < 0 ? nullptr : fdopendir(fd);
  if (!d) {
    if (fd >= 0) close(fd);
    problems->push_back(std::string(sub) + "/ cannot be read: " + std::strerror(errno));
    return;
  }
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat fs;
    const bool file = fstatat(fd, n.c_str(), &fs, AT_SYMLINK_NOFOLLOW) == 0 &&
                      (S_ISREG(fs.st_mode) || S_ISLNK(fs.st_mode));
    if (file && ok(n))
      names->push_back(n);
    else
      problems->push_back(std::string(sub) + "/" + n + " is not a file invmw wrote");
  }
  closedir(d);
}

}  // namespace run_dir_detail

// Removes the earlier run in dir so that a new run can use it: only the files invmw itself
// writes there (meta.json, profile.json, profile.txt, the OTF2 archive traces.otf2, traces.def
// and traces/, invmw's files in raw/ and callsites/), then the emptied raw/, traces/ and
// callsites/. Links are
// removed, never followed. Anything else in raw/ or traces/ (a file of the user) stops the
// replacement before anything is removed: false with *error naming it. Other entries of dir
// (the user's files, collect/) stay.
inline bool RemoveEarlierRun(const std::string& dir, std::string* error) {
  using namespace run_dir_detail;
  static const char* const kFiles[] = {"meta.json", "profile.json", "profile.txt", "traces.otf2",
                                       "traces.def"};
  std::vector<std::string> raw, archive, problems;
  struct stat st;
  for (const char* f : kFiles)
    if (lstat((dir + "/" + f).c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      problems.push_back(std::string(f) + " is a directory");
  ListOwnFiles(dir, "raw", IsRawFileName, &raw, &problems);
  ListOwnFiles(dir, "traces", IsArchiveFileName, &archive, &problems);
  std::vector<std::string> callsites;
  ListOwnFiles(dir, "callsites", IsCallSiteFileName, &callsites, &problems);
  if (!problems.empty()) {
    std::string list;
    for (size_t i = 0; i < problems.size() && i < 5; ++i) list += (i ? "; " : "") + problems[i];
    if (problems.size() > 5) list += "; ...";
    *error = dir + " cannot be replaced: " + list +
             " (invmw removes only its own files; move the others away)";
    return false;
  }
  auto remove = [&](const std::string& p) {
    if (unlink(p.c_str()) != 0 && errno != ENOENT) {
      *error = p + ": cannot be removed: " + std::strerror(errno);
      return false;
    }
    return true;
  };
  for (const auto& n : raw)
    if (!remove(dir + "/raw/" + n)) return false;
  for (const auto& n : archive)
    if (!remove(dir + "/traces/" + n)) return false;
  for (const auto& n : callsites)
    if (!remove(dir + "/callsites/" + n)) return false;
  for (const char* f : kFiles)
    if (!remove(dir + "/" + f)) return false;
  for (const char* sub : {"raw", "traces", "callsites"}) {
    const std::string p = dir + "/" + sub;
    if (rmdir(p.c_str()) != 0 && errno != ENOENT) {
      *error = p + ": cannot be removed: " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace invmw
