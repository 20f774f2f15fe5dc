#include "launch/launcher.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "cli/paths.h"
#include "common/config.h"
#include "common/elf_deps.h"
#include "invmw_sanitize.h"
#include "pvm_wrap/static_pvm.h"

namespace invmw::launch {
namespace {

std::string Which(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= p.size()) {
    size_t c = p.find(':', pos);
    if (c == std::string::npos) c = p.size();
    std::string cand = p.substr(pos, c - pos) + "/" + name;
    if (access(cand.c_str(), X_OK) == 0) return cand;
    pos = c + 1;
  }
  return name;
}

std::vector<std::string> SplitPreload(const std::string& s) {
  // ld.so separates LD_PRELOAD entries by colons or spaces.
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t e = s.find_first_of(": ", pos);
    if (e == std::string::npos) e = s.size();
    if (e > pos) out.push_back(s.substr(pos, e - pos));
    pos = e + 1;
  }
  return out;
}

// Which MPI the program of a launcher-less run uses: its dynamic dependencies, read from the
// ELF file itself (common/elf_deps.h). Nothing is run: the program may be anything the user
// named, and its name is never shell syntax.
std::string ProgramFlavor(const std::string& prog) {
  const std::string path = Which(prog);
  std::string flavor = "openmpi";
  bool pvm = false, mpi = false;
  for (const auto& dep : elf::ResolveDependencies(path)) {
    // A compatibility name (a libmpi* link to libmpich) is told by the file it resolves to.
    std::string names = dep.name + " " + dep.path;
    char real[PATH_MAX];
    if (!dep.path.empty() && realpath(dep.path.c_str(), real)) names += " " + Basename(real);
    if (names.find("libmpich") != std::string::npos) flavor = "mpich";
    mpi |= names.find("libmpi") != std::string::npos;
    pvm |= names.find("libpvm3") != std::string::npos;
  }
  // A program with libpvm3 linked in statically needs no libpvm3, but only the PVM preload can
  // tell the user that its calls are not observed (docs/pvm.md).
  if (!pvm && !mpi) pvm = pvm::HasStaticPvm(path.c_str());
  // A PVM program gets the PVM companion library (pvm_wrap), unless it also uses MPI.
  if (pvm && !mpi) flavor = "pvm";
  return flavor;
}

// The sanitizers' options reach ranks on other nodes too. Unset ones get what the MPI
// libraries need (README "Sanitizer builds"): the build's suppression file for their own
// leaks (races), whole allocation stacks (the frame-pointer unwinder stops in libmpi, before
// the frames the suppressions match), and Open MPI's components kept loaded after
// MPI_Finalize (a leak in an unloaded one cannot be attributed).
void AddSanitizerVars(RankVars* vars) {
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
                           "OMPI_MCA_mca_base_component_disable_dlclose"})
    if (const char* v = std::getenv(name)) vars->emplace_back(name, v);
  const bool asan = std::string(INVMW_SANITIZE_KIND) == "address";
  auto fallback = [&](const char* name, const std::string& value) {
    if (!std::getenv(name)) vars->emplace_back(name, value);
  };
  if (*INVMW_SANITIZER_LSAN_SUPP && access(INVMW_SANITIZER_LSAN_SUPP, R_OK) == 0)
    fallback("LSAN_OPTIONS", std::string("suppressions=") + INVMW_SANITIZER_LSAN_SUPP);
  if (*INVMW_SANITIZER_TSAN_SUPP && access(INVMW_SANITIZER_TSAN_SUPP, R_OK) == 0)
    fallback("TSAN_OPTIONS", std::string("suppressions=") + INVMW_SANITIZER_TSAN_SUPP);
  if (asan) {
    fallback("ASAN_OPTIONS", "fast_unwind_on_malloc=0");
    fallback("OMPI_MCA_mca_base_component_disable_dlclose", "1");
  }
}

}  // namespace

std::string Basename(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string Absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return p;
  return std::string(cwd) + "/" + p;
}

Launcher DetectLauncher(const std::string& argv0) {
  std::string b = Basename(argv0);
  if (b == "srun") return Launcher::kSlurm;
  if (b.find("mpirun") == std::string::npos && b.find("mpiexec") == std::string::npos &&
      b != "orterun" && b != "prterun")
    return Launcher::kNone;
  // mpirun/mpiexec are alternatives symlinks: the real file says which MPI it belongs to.
  char real[PATH_MAX];
  std::string rb = b;
  if (realpath(Which(argv0).c_str(), real)) rb = Basename(real);
  if (rb.find("hydra") != std::string::npos || rb.find("mpich") != std::string::npos)
    return Launcher::kHydra;
  return Launcher::kOpenMpi;
}

std::string DefaultFlavor(Launcher launcher, const std::string& program) {
  switch (launcher) {
    case Launcher::kHydra:
      return "mpich";
    case Launcher::kOpenMpi:
      return "openmpi";
    case Launcher::kNone:
      return ProgramFlavor(program);
    case Launcher::kSlurm:
      break;
  }
  return "";  // srun: the default library
}

std::string FindPreloadLibrary(const std::string& flavor, std::string* error) {
  std::string name = "libinvmw.so";
  if (!flavor.empty() && flavor != INVMW_DEFAULT_MPI) name = "libinvmw-" + flavor + ".so";
  std::string bin = cli::ExecutableDir();
  std::vector<std::string> candidates = {bin + "/../lib/" + name,
                                         bin + "/" + INVMW_BIN_TO_LIBDIR + "/" + name};
  for (const auto& c : candidates)
    if (access(c.c_str(), R_OK) == 0) return c;
  *error = name + " not found next to " + bin +
           " (looked in ../lib and " INVMW_BIN_TO_LIBDIR "); was invmw built with " +
           (flavor.empty() ? std::string("its default MPI") : flavor) + " support?";
  return "";
}

// In a sanitizer build (-DINVMW_SANITIZE) libinvmw.so needs its sanitizer runtime, and the
// runtime refuses to start unless it is the first library of the process, so the runtimes
// recorded at configure time go first (and are dropped from the old list, where they would
// come too late).
std::string RanksPreload(const std::string& lib, const char* old) {
  std::vector<std::string> first = SplitPreload(INVMW_SANITIZER_PRELOAD);
  std::string preload;
  for (const auto& r : first) preload += r + ":";
  preload += lib;
  auto same = [](const std::string& a, const std::string& b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    return a == b || (realpath(a.c_str(), ra) && realpath(b.c_str(), rb) && !strcmp(ra, rb));
  };
  if (old && *old) {
    if (first.empty()) return preload + ":" + old;
    for (const auto& o : SplitPreload(old)) {
      bool runtime = false;
      for (const auto& r : first) runtime |= same(o, r);
      if (!runtime) preload += ":" + o;
    }
  }
  return preload;
}

RankVars BaseRankVars(const std::string& lib, const std::string& out,
                      const std::vector<std::string>& env, bool quiet) {
  RankVars vars = {{"LD_PRELOAD", RanksPreload(lib, std::getenv("LD_PRELOAD"))},
                   {"INVMW_OUTPUT_DIR", out}};
  if (*INVMW_SANITIZE_KIND) AddSanitizerVars(&vars);
  for (const auto& e : env) {
    size_t eq = e.find('=');
    if (e.substr(0, eq) != "INVMW_OUTPUT_DIR") vars.emplace_back(e.substr(0, eq), e.substr(eq + 1));
  }
  if (quiet) vars.emplace_back("INVMW_RUNTIME_QUIET", "1");
  return vars;
}

void AddInheritedConfig(RankVars* vars) {
  for (const auto& v : config::Variables())
    if (const char* val = std::getenv(v.name); val && std::string(v.name) != "INVMW_OUTPUT_DIR") {
      bool given = false;
      for (const auto& kv : *vars) given |= kv.first == v.name;
      if (!given) vars->emplace_back(v.name, val);
    }
}

bool RanksQuiet(const RankVars& vars) {
  bool quiet = false;
  for (const auto& [k, v] : vars)
    if (k == "INVMW_RUNTIME_QUIET") quiet = !v.empty() && v != "0" && v != "false";
  return quiet;
}

std::string SlurmExportProblem(const RankVars& vars) {
  for (const auto& [k, v] : vars)
    if (k == "LD_PRELOAD" && v.find(',') != std::string::npos)
      return "srun's --export separates variables by commas, so it cannot pass LD_PRELOAD=" + v +
             " (rename the file or directory with the comma)";
  return "";
}

// srun honours only its last --export, and with ALL a variable of srun's own environment wins
// over the value given in the option (checked with Slurm 22.05). So the ranks' variables are
// put into srun's environment (ExecJob; srun itself ignores them), except LD_PRELOAD, which
// would preload srun too: that one alone goes through --export, with srun's own LD_PRELOAD
// removed (RanksPreload already appended it to the ranks' one). A --export of the user's is
// kept and extended; since it may list names only, the other variables are named in it too.
std::vector<std::string> SlurmArgv(const std::vector<std::string>& command, const RankVars& vars) {
  std::string preload, names;
  for (const auto& [k, v] : vars) {
    if (k == "LD_PRELOAD")
      preload = "LD_PRELOAD=" + v;
    else
      names += "," + k;
  }
  std::vector<std::string> full = {command[0]};
  bool merged = false;
  size_t i = 1;
  // srun's options end where the program starts: the first word that is not an option and
  // names an executable (a value such as `-n 4` does not), or `--`.
  for (; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "--" || (a[0] != '-' && access(Which(a).c_str(), X_OK) == 0)) break;
    std::string user;
    if (a.rfind("--export=", 0) == 0) {
      user = a.substr(9);
    } else if (a == "--export" && i + 1 < command.size()) {
      user = command[++i];
    } else {
      full.push_back(a);
      continue;
    }
    // NONE means "only what is named"; srun 22.05 refuses NONE followed by names.
    std::string exp = user == "NONE" ? preload + names : user + "," + preload + names;
    full.push_back("--export=" + exp);
    merged = true;
  }
  if (!merged) full.insert(full.begin() + 1, "--export=ALL," + preload);
  full.insert(full.end(), command.begin() + static_cast<std::ptrdiff_t>(i), command.end());
  return full;
}

std::vector<std::string> LauncherArgv(Launcher launcher, const std::vector<std::string>& command,
                                      const RankVars& vars) {
  std::vector<std::string> full;
  full.push_back(command[0]);
  switch (launcher) {
    case Launcher::kOpenMpi:
      for (const auto& [k, v] : vars) full.insert(full.end(), {"-x", k + "=" + v});
      break;
    case Launcher::kHydra:
      for (const auto& [k, v] : vars) full.insert(full.end(), {"-genv", k, v});
      break;
    case Launcher::kSlurm:
      return SlurmArgv(command, vars);
    case Launcher::kNone:
      break;
  }
  full.insert(full.end(), command.begin() + 1, command.end());
  return full;
}

}  // namespace invmw::launch
