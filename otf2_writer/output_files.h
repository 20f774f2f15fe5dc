// Writing the trace outputs (OTF2 archives, exports) so that a failure never destroys what was
// there before.
//
// Why: an archive is three entries (NAME.otf2, NAME.def, NAME/) and an export one file; deleting
// them first and then failing (full disk, RLIMIT_FSIZE, out of memory) left nothing. Everything
// is therefore written under a temporary name in the same directory and renamed into place only
// after every write and close succeeded. While writing, SIGXFSZ is ignored so that exceeding
// RLIMIT_FSIZE is the error EFBIG, checked like ENOSPC, instead of killing the process (which,
// in the preload runtime, is the application).
//
// Contract: functions that can fail throw std::runtime_error naming the path; destructors never
// throw and remove only the temporary entries their object created.
#pragma once

#include <cstdio>
#include <string>

#include "common/ignore_sigxfsz.h"

namespace invmw::otf2 {

// SIGXFSZ ignored while writing (common/ignore_sigxfsz.h).
using invmw::IgnoreSigxfsz;

// True when any of dir/NAME.otf2, dir/NAME.def, dir/NAME exists (a symlink counts).
bool ArchiveExists(const std::string& dir, const std::string& name);

// An archive name of dir none of whose three entries exists: ".NAME.writing-PID-K". The entries
// of that name that exist when the object dies are removed, unless Replace moved them away.
class TempArchive {
 public:
  TempArchive(const std::string& dir, const std::string& final_name);
  ~TempArchive();
  TempArchive(const TempArchive&) = delete;
  TempArchive& operator=(const TempArchive&) = delete;
  const std::string& name() const { return name_; }
  // Moves the written archive to the final name, replacing an existing archive of that name:
  // the old entries are first renamed aside (anchor first, so no reader meets an anchor whose
  // files are half replaced), the new ones renamed in (anchor last), the old ones removed. On
  // a failure everything renamed so far is renamed back and std::runtime_error is thrown.
  // Returns a warning (empty if none), e.g. an old entry that could not be removed.
  std::string Replace();

 private:
  std::string dir_, final_, name_;
  bool moved_ = false;
};

// A file written under a temporary name next to `path` (created with O_EXCL) and renamed onto
// path by Commit, after fflush, fsync and fclose all succeeded. Without Commit the temporary
// file is removed.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  FILE* get() const { return file_; }
  void Commit();

 private:
  std::string path_, tmp_;
  FILE* file_ = nullptr;
};

// Throws when writing `out` would overwrite a file of the archive whose anchor is `anchor`
// (NAME.otf2, NAME.def or anything under NAME/), by path after resolving symlinks or by device
// and inode (hard links).
void RefuseArchiveOverwrite(const std::string& anchor, const std::string& out);

}  // namespace invmw::otf2
