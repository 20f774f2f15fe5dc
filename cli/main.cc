// invmw: the command-line driver. Verbs are registered by the parts that own them (see verb.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/verb.h"
#include "invmw_version.h"

namespace invmw::cli {

static std::vector<Verb>& Registry() {
  static std::vector<Verb> verbs;
  return verbs;
}

bool RegisterVerb(const Verb& verb) {
  Registry().push_back(verb);
  return true;
}

const std::vector<Verb>& Verbs() {
  auto& v = Registry();
  std::sort(v.begin(), v.end(),
            [](const Verb& a, const Verb& b) { return std::strcmp(a.name, b.name) < 0; });
  return v;
}

static void Usage(FILE* out) {
  std::fprintf(out,
               "usage: invmw <verb> [options] [arguments]\n\n"
               "invmw observes unmodified MPI/PVM applications from below (LD_PRELOAD), maps what "
               "it\nsees onto the application's terms, fits performance models and predicts "
               "other machines.\n\nverbs:\n");
  for (const auto& v : Verbs()) std::fprintf(out, "  %-18s %s\n", v.name, v.summary);
  std::fprintf(out,
               "\n`invmw <verb> --help` explains a verb. `invmw --version` prints the version.\n");
}

}  // namespace invmw::cli

int main(int argc, char** argv) {
  using namespace invmw::cli;
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    Usage(stdout);
    return 0;
  }
  if (first == "--version" || first == "version") {
    std::printf("invmw %s\n", INVMW_VERSION);
    return 0;
  }
  // Longest match first, so "trace export" wins over a plain "trace".
  const Verb* best = nullptr;
  int best_words = 0;
  for (const auto& v : Verbs()) {
    std::string name = v.name;
    int words = 0;
    size_t pos = 0;
    bool match = true;
    while (match) {
      size_t sp = name.find(' ', pos);
      std::string word = name.substr(pos, sp == std::string::npos ? std::string::npos : sp - pos);
      if (1 + words >= argc || word != argv[1 + words])
        match = false;
      else
        ++words;
      if (sp == std::string::npos) break;
      pos = sp + 1;
    }
    if (match && words > best_words) {
      best = &v;
      best_words = words;
    }
  }
  if (!best) {
    // A group's first word alone ("invmw plot"): say which verbs it has.
    const std::string prefix = first + " ";
    std::vector<const Verb*> members;
    for (const auto& v : Verbs())
      if (std::string(v.name).compare(0, prefix.size(), prefix) == 0) members.push_back(&v);
    if (!members.empty()) {
      bool help = argc > 2 && (std::string(argv[2]) == "--help" || std::string(argv[2]) == "-h");
      FILE* out = help ? stdout : stderr;
      if (!help)
        std::fprintf(stderr, "invmw: error: '%s%s%s' is not a verb; '%s' is followed by one of:\n",
                     first.c_str(), argc > 2 ? " " : "", argc > 2 ? argv[2] : "", first.c_str());
      for (const Verb* v : members) std::fprintf(out, "  %-26s %s\n", v->name, v->summary);
      std::fprintf(out, "(invmw %s <verb> --help explains each)\n", first.c_str());
      return help ? 0 : 2;
    }
    std::fprintf(stderr, "invmw: error: unknown verb '%s'\n\n", argv[1]);
    Usage(stderr);
    return 2;
  }
  // The verb sees argv[0] = its name and its own arguments after it.
  return best->run(argc - best_words, argv + best_words);
}
