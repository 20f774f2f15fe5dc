#include "callsites/trace_names.h"

#include <dirent.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "callsites/callsite_file.h"
#include "callsites/resolve.h"
#include "otf2_writer/callsite_names.h"
#include "otf2_writer/trace_callsites.h"

namespace invmw::callsites {

TraceNames NameTraceCallSites(const std::string& dir, const std::string& archive_name,
                              std::vector<std::string>* problems) {
  const auto t0 = std::chrono::steady_clock::now();
  TraceNames out;
  struct stat st;
  if (stat((dir + "/" + archive_name + ".otf2").c_str(), &st) != 0) return out;
  const std::string cdir = dir + "/callsites";
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(cdir.c_str()), closedir);
  if (!d) return out;
  std::map<std::string, otf2::ContextName> names;
  Resolver resolver;
  while (dirent* e = readdir(d.get())) {
    int rank = 0;
    if (!ParseRankFileName(e->d_name, &rank)) continue;
    const std::string path = cdir + "/" + e->d_name;
    RankFile f;
    std::string err;
    if (!ReadRankFile(path, &f, &err)) continue;  // the profile's step reported it
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    otf2::RankTraceSites sites;
    std::vector<std::string> ignored;  // the converter reported them
    if (!otf2::ParseTraceSites(text.str(), path, &sites, &ignored)) continue;
    for (size_t i = 0; i < sites.labels.size(); ++i) {
      if (names.count(sites.labels[i])) continue;
      const Frame fr = resolver.Resolve(f, sites.pcs[i]);
      otf2::ContextName n;
      n.function = fr.function;
      if (fr.how == "line") {
        n.file = fr.file;
        n.line = uint32_t(fr.line);
      }
      names[sites.labels[i]] = n;
    }
  }
  if (names.empty()) return out;
  const otf2::NameResult r = otf2::NameTraceContexts(dir, archive_name, names);
  out.ok = r.ok;
  out.contexts = r.contexts;
  out.renamed = r.renamed;
  if (!r.ok) problems->push_back(r.error);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace invmw::callsites
