// Helpers shared by the fuzz targets: splitting one input into several files, and a private
// scratch directory for the readers that only take a run directory.
//
// Why split inputs: the raw-run and raw-samples readers take a directory with several files;
// libFuzzer gives one byte string. Parts are separated by kPartMarker (listed in the targets'
// dictionaries so the fuzzer finds it), and part i becomes file i of the target's fixed list.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace invmw::fuzz {

constexpr std::string_view kPartMarker = "\n@@invmw-part@@\n";

inline std::vector<std::string_view> SplitParts(const uint8_t* data, size_t size,
                                                size_t max_parts) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    size_t at = in.find(kPartMarker);
    if (at == std::string_view::npos) break;
    parts.push_back(in.substr(0, at));
    in.remove_prefix(at + kPartMarker.size());
  }
  parts.push_back(in);
  return parts;
}

// A directory created once per process (mkdtemp under $TMPDIR, else /dev/shm, else /tmp) and
// removed with its contents at exit.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl;
    for (const char* b : {base, "/dev/shm", "/tmp"}) {
      if (!b || !*b || access(b, W_OK) != 0) continue;
      tmpl = std::string(b) + "/invmw-fuzz-XXXXXX";
      break;
    }
    if (tmpl.empty() || !mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  // The directory and everything in it were created by this process (the targets' files and
  // what the code under test wrote there, e.g. the collector's logs).
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  // Creates path()/rel (one level of subdirectory at most, created once).
  void MakeSubdir(const std::string& rel) { mkdir((path_ + "/" + rel).c_str(), 0700); }
  // Writes path()/rel with exactly these bytes.
  void Write(const std::string& rel, std::string_view bytes) {
    const std::string p = path_ + "/" + rel;
    int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) std::abort();
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t w = write(fd, bytes.data() + done, bytes.size() - done);
      if (w <= 0) std::abort();
      done += size_t(w);
    }
    if (close(fd) != 0) std::abort();
  }
  // Removes path()/rel (a file of this directory).
  void Remove(const std::string& rel) { unlink((path_ + "/" + rel).c_str()); }

 private:
  std::string path_;
};

}  // namespace invmw::fuzz
