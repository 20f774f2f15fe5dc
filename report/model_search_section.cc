// Kept apart from html_report.cc: the section has its own input file and format, and the rest of
// the page does not depend on it.
#include "report/model_search_section.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/xml_escape.h"
#include "report/html_report.h"

namespace invmw::report {
namespace {

using nlohmann::json;

std::string Pct(const json& o, const char* key) {
  if (!o.contains(key) || !o[key].is_number()) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", 100 * o[key].get<double>());
  return b;
}

std::string Sec(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

std::string Row(const std::vector<std::string>& cells, const char* tag = "td") {
  std::string r = "<tr>";
  for (const auto& c : cells) r += std::string("<") + tag + ">" + c + "</" + tag + ">";
  return r + "</tr>\n";
}

std::string Str(const json& o, const char* key) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

const json& Array(const json& o, const char* key, const std::string& file,
                  const std::string& where) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_array())
    throw ReportError(file + ": field '" + where + key + "' is missing or not an array");
  return o[key];
}

}  // namespace

std::string ModelSearchSection(const std::string& dir) {
  const std::string file = dir + "/model-search.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  json doc;
  try {
    doc = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    throw ReportError(file + ": not valid JSON: " + e.what());
  }
  std::string h =
      "<h2>Model search (real applications, held-out points)</h2>\n<p>Models found by "
      "<code>invmw model search</code> on the design points that were not held out, predicting "
      "the held-out points with <code>invmw predict</code> on the measured machine's table. "
      "Error = |predicted &minus; measured mean| / measured mean.</p>\n<table class=search>\n" +
      Row({"design", "platform", "response", "selected model", "CV error %", "held-out points",
           "mean |error| %", "worst |error| %"},
          "th");
  std::string details, checks;
  int d = 0;
  for (const json& des : Array(doc, "designs", file, "")) {
    const std::string w = "designs[" + std::to_string(d++) + "].";
    const std::string name = XmlEscape(Str(des, "design"));
    if (des.contains("error")) {
      h += Row({name, "", "", "<span class=warn>" + XmlEscape(Str(des, "error")) + "</span>", "",
                "", "", ""});
      continue;
    }
    for (const json& r : Array(des, "responses", file, w)) {
      std::string model = r.contains("error")
                              ? "<span class=warn>" + XmlEscape(Str(r, "error")) + "</span>"
                              : "<code>" + XmlEscape(Str(r, "formula")) + "</code>";
      size_t n = r.contains("heldout") && r["heldout"].is_array() ? r["heldout"].size() : 0;
      h += Row({name, XmlEscape(Str(des, "platform")), XmlEscape(Str(r, "response")), model,
                Pct(r, "cv_error"), std::to_string(n), Pct(r, "mean_rel_error"),
                Pct(r, "max_rel_error")});
      if (!n) continue;
      details += "<h3>" + name + ": " + XmlEscape(Str(r, "response")) +
                 " at held-out points</h3>\n" + "<table>\n" +
                 Row({"point", "replications", "measured (s)", "predicted (s)", "error %"}, "th");
      for (const json& p : r["heldout"]) {
        std::string pt;
        if (p.contains("point") && p["point"].is_object())
          for (const auto& [f, v] : p["point"].items())
            pt += (pt.empty() ? "" : " ") + XmlEscape(f) + "=" +
                  (v.is_number() ? Sec(v.get<double>()) : std::string("?"));
        auto num = [&](const char* k) {
          return p.contains(k) && p[k].is_number() ? Sec(p[k].get<double>()) : std::string("-");
        };
        details +=
            Row({pt, num("replications"), num("measured"), num("predicted"), Pct(p, "rel_error")});
      }
      details += "</table>\n";
    }
    if (des.contains("checks") && des["checks"].is_array())
      for (const json& c : des["checks"])
        checks += "<li>" + name + ": " + XmlEscape(Str(c, "response")) + " has the term <code>" +
                  XmlEscape(Str(c, "term")) + "</code>: " +
                  (c.value("found", false) ? "found" : "<span class=warn>not found</span>") +
                  "</li>\n";
  }
  h += "</table>\n";
  if (!checks.empty()) h += "<p>Expected terms:</p>\n<ul>\n" + checks + "</ul>\n";
  return h + details;
}

}  // namespace invmw::report
