#include "platforms/cli/simulated_exec.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fitter/file_io.h"
#include "fitter/platform_table.h"
#include "fitter/simgrid_export.h"
#include "otf2_writer/converter.h"
#include "otf2_writer/smpi_import.h"

namespace invmw::platforms::cli {

namespace {

std::string FindOnPath(const std::string& prog) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(ss, d, ':');) {
    std::string f = (d.empty() ? "." : d) + "/" + prog;
    struct stat st;
    if (stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

// The table of a simulated platform: a path relative to the platform file, or a table name.
std::string TablePath(const emulate::Platform& p) {
  if (p.table.find('/') != std::string::npos && p.table[0] != '/' && !p.path.empty()) {
    std::string dir = p.path.substr(0, p.path.rfind('/') + 1);
    return fit::ResolvePlatformTable(dir + p.table, "");
  }
  return fit::ResolvePlatformTable(p.table, "");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return ss.str();
}

}  // namespace

int ExecSimulated(const emulate::Platform& p, int ranks, const std::string& out_dir,
                  const std::vector<std::string>& cmd) {
  const std::string smpirun = FindOnPath("smpirun");
  if (smpirun.empty()) {
    std::fprintf(stderr,
                 "invmw: error: simulated platform %s needs SimGrid's smpirun, which is not on "
                 "PATH (Debian libsimgrid-dev; scripts/setup.sh installs it)\n",
                 p.name.c_str());
    return 125;
  }
  if (ranks <= 0) ranks = p.nodes;

  fit::SimgridPlatform sp;
  try {
    fit::SimgridOptions o;
    o.nodes = p.nodes;
    sp = fit::ExportSimgrid(fit::LoadPlatformTable(TablePath(p)), o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "invmw: error: simulated platform %s (%s): table '%s': %s\n",
                 p.name.c_str(), p.path.c_str(), p.table.c_str(), e.what());
    return 125;
  }

  const bool trace = !out_dir.empty();
  std::string dir = out_dir;
  if (!trace) {
    char tmpl[] = "/tmp/invmw-sim-XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::fprintf(stderr, "invmw: error: cannot create a temporary directory: %s\n",
                   std::strerror(errno));
      return 125;
    }
    dir = tmpl;
  }
  const std::string xml = dir + "/platform.xml", hosts = dir + "/platform.hostfile",
                    cfg = dir + "/platform.cfg", trace_file = dir + "/smpi.trace";
  std::vector<std::string> created;
  auto cleanup = [&] {
    if (trace) return;
    for (const std::string& f : created) unlink(f.c_str());
    rmdir(dir.c_str());
  };
  try {
    for (const auto& [path, text] :
         {std::pair<std::string, std::string>{xml, sp.xml}, {hosts, sp.hostfile}, {cfg, sp.cfg}}) {
      fit::WriteFileAtomic(path, text);
      created.push_back(path);
    }
  } catch (const std::exception& e) {
    cleanup();
    std::fprintf(stderr, "invmw: error: simulated platform %s: %s\n", p.name.c_str(), e.what());
    return 125;
  }

  std::vector<std::string> argv = {smpirun,     "-np", std::to_string(ranks), "-platform", xml,
                                   "-hostfile", hosts};
  std::stringstream lines(sp.cfg);
  for (std::string l; std::getline(lines, l);)
    if (!l.empty()) argv.push_back(l);
  argv.push_back(p.computation == "host" ? "--cfg=smpi/simulate-computation:yes"
                                         : "--cfg=smpi/simulate-computation:no");
  if (trace)
    argv.insert(argv.end(), {"-trace", "--cfg=tracing/filename:" + trace_file,
                             "--cfg=tracing/smpi/display-sizes:yes"});
  for (const std::string& c : p.cfg) argv.push_back("--cfg=" + c);
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  {
    std::string line;
    for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
    std::fprintf(stderr, "invmw: platform %s: %d ranks on %d simulated hosts (table %s): %s\n",
                 p.name.c_str(), ranks, sp.nodes, p.table.c_str(), line.c_str());
  }

  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    cleanup();
    std::fprintf(stderr, "invmw: error: fork: %s\n", std::strerror(errno));
    return 125;
  }
  if (pid == 0) {
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    std::fprintf(stderr, "invmw: cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cleanup();
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
  }
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  if (rc != 0 || !trace) return rc;

  try {
    otf2::SmpiTrace t = otf2::ParsePaje(ReadFile(trace_file), trace_file);
    for (const auto& problem : t.problems)
      std::fprintf(stderr, "invmw: warning: %s: %s\n", trace_file.c_str(), problem.c_str());
    otf2::WriteSmpiRawRun(t, dir, "node-");
    otf2::ConvertResult r = otf2::ConvertToOtf2(dir);
    for (const auto& problem : r.problems)
      std::fprintf(stderr, "invmw: warning: %s\n", problem.c_str());
    std::fprintf(stderr,
                 "invmw: simulated %.6f s in %.3f s of host time; SMPI trace: %llu events -> "
                 "%s (%llu OTF2 events)\n",
                 t.end_time, host_s, static_cast<unsigned long long>(t.events), r.archive.c_str(),
                 static_cast<unsigned long long>(r.events_out));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "invmw: error: SMPI trace of the simulated run: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace invmw::platforms::cli
