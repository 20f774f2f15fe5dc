#include "experiments/runner/responses.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "analysis/analysis.h"
#include "common/file_io.h"
#include "otf2_reader/trace_reader.h"

namespace invmw::experiment {

namespace {

const char* const kOpalNames[] = {"t_wall", "t_par_comp", "t_seq_comp",
                                  "t_comm", "t_sync",     "t_idle"};

// The value at a dotted path ("classification.communication"), or nullptr.
const nlohmann::json* AtPath(const nlohmann::json& doc, const std::string& path) {
  const nlohmann::json* cur = &doc;
  size_t pos = 0;
  while (true) {
    size_t dot = path.find('.', pos);
    std::string key = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

// Numeric leaves of the document (for the error message), at most a screenful.
void NumericPaths(const nlohmann::json& j, const std::string& prefix,
                  std::vector<std::string>* out) {
  if (out->size() >= 40) return;
  if (j.is_number()) {
    out->push_back(prefix);
  } else if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      NumericPaths(*it, prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  }
}

}  // namespace

std::map<std::string, double> ExtractResponses(const std::string& run_dir,
                                               const std::vector<std::string>& names) {
  otf2::Trace trace = otf2::ReadTrace(run_dir + "/traces.otf2");
  analysis::Analysis a = analysis::Analyze(trace);
  nlohmann::json doc = analysis::ToJson(a);

  // The Opal breakdown exists only for runs with its client/server structure; other designs
  // may still ask for generic keys of the analysis.
  std::map<std::string, double> opal;
  std::string opal_error;
  try {
    analysis::OpalBreakdown ob = analysis::AnalyzeOpal(a);
    opal = ob.responses;
    doc["opal"] = analysis::ToJson(ob);
  } catch (const std::exception& e) {
    opal_error = e.what();
  }
  // Checked and renamed into place: a full disk fails the run's responses instead of leaving a
  // cut analysis.json beside the row.
  WriteFileAtomic(run_dir + "/analysis.json", doc.dump(1) + "\n");

  std::map<std::string, double> values;
  for (const std::string& name : names) {
    if (auto it = opal.find(name); it != opal.end()) {
      values[name] = it->second;
      continue;
    }
    const nlohmann::json* v = AtPath(doc, name);
    if (v && v->is_number()) {
      values[name] = v->get<double>();
      continue;
    }
    for (const char* o : kOpalNames)
      if (name == o)
        throw std::runtime_error("response '" + name + "': the run has no Opal breakdown (" +
                                 (opal_error.empty() ? "no such value" : opal_error) + ")");
    std::vector<std::string> avail;
    NumericPaths(doc, "", &avail);
    std::string list;
    for (const auto& p : avail) list += (list.empty() ? "" : ", ") + p;
    throw std::runtime_error("response '" + name + "' is not a number in " + run_dir +
                             "/analysis.json (numbers there include: " + list + ")");
  }
  for (const auto& [k, v] : values)
    if (!std::isfinite(v)) throw std::runtime_error("response '" + k + "' is not finite");
  return values;
}

std::string CheckResponseName(const std::string& name) {
  for (const char* o : kOpalNames)
    if (name == o) return "";
  // The document's keys are those of an empty analysis: the same code writes both.
  static const nlohmann::json kDoc = [] {
    nlohmann::json d = analysis::ToJson(analysis::Analysis{});
    d["opal"] = nlohmann::json::object();
    return d;
  }();
  const std::string root = name.substr(0, name.find('.'));
  if (kDoc.contains(root)) return "";
  std::string opal, keys;
  for (const char* o : kOpalNames) opal += (opal.empty() ? "" : ", ") + std::string(o);
  for (const auto& [k, v] : kDoc.items()) keys += (keys.empty() ? "" : ", ") + k;
  return "'" + name + "' is not a response: expected an Opal name (" + opal +
         ") or a path into the analysis JSON starting with one of its keys (" + keys +
         "), e.g. classification.communication";
}

}  // namespace invmw::experiment
