// Reads the pipeline's own machine-readable outputs (never its text reports), so the page shows
// exactly the numbers the other verbs computed; every table is a plain view of one JSON file.
#include "report/html_report.h"
#include "common/xml_escape.h"
#include "report/json_fields.h"
#include "report/replay_section.h"
#include "report/model_search_section.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace invmw::report {
namespace {

using nlohmann::json;

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.5g", v);
  return b;
}

// For statistics a fit may leave undefined (JSON null): R² over all responses together, standard
// errors when the covariance is rank deficient.
std::string OptNum(const json& obj, const char* key) {
  return obj.contains(key) && obj[key].is_number() ? Num(obj[key].get<double>()) : "-";
}

std::string Row(const std::vector<std::string>& cells, const char* tag = "td") {
  std::string r = "<tr>";
  for (const auto& c : cells) r += std::string("<") + tag + ">" + c + "</" + tag + ">";
  return r + "</tr>\n";
}

std::string ProfileSection(const std::string& dir) {
  const std::string file = dir + "/profile/profile.json";
  json p = ReadJson(file);
  const json& sum = Field(p, "summary", file, "");
  const json& wall = Field(sum, "wall_s", file, "summary.");
  const json& mpi = Field(sum, "mpi_s", file, "summary.");
  std::string h = "<h2>Profile of the example</h2>\n";
  if (p.contains("metadata") && p["metadata"].contains("command"))
    h += "<p>Command: <code>" + XmlEscape(p["metadata"]["command"].dump()) + "</code></p>\n";
  h += "<table>\n" + Row({"ranks", "wall mean (s)", "wall max (s)", "MPI mean (s)", "MPI max (s)",
                          "MPI share", "MPI imbalance"},
                         "th");
  h += Row({Num(Number(sum, "ranks", file, "summary.")),
            Num(Number(wall, "mean", file, "summary.wall_s.")),
            Num(Number(wall, "max", file, "summary.wall_s.")),
            Num(Number(mpi, "mean", file, "summary.mpi_s.")),
            Num(Number(mpi, "max", file, "summary.mpi_s.")),
            Num(100 * Number(sum, "mpi_share", file, "summary.")) + "%",
            Num(Number(mpi, "imbalance", file, "summary.mpi_s."))});
  h += "</table>\n<table>\n" +
       Row({"MPI function", "calls", "time (s)", "bytes sent", "bytes received"}, "th");
  for (const auto& [name, f] : Field(p, "functions", file, "").items()) {
    const std::string w = "functions." + name + ".";
    h += Row({XmlEscape(name), Num(Number(f, "calls", file, w)), Num(Number(f, "time_s", file, w)),
              Num(Number(f, "bytes_sent", file, w)), Num(Number(f, "bytes_recv", file, w))});
  }
  return h + "</table>\n";
}

std::string FitSection(const std::string& dir) {
  const std::string file = dir + "/fit.json";
  json f = ReadJson(file);
  std::string h =
      "<h2>Fitted parameters</h2>\n<p>Model <code>" + XmlEscape(Text(f, "model", file, "")) +
      "</code> fitted to " + XmlEscape(Text(f, "data", file, "")) + "; " +
      (Field(f, "converged", file, "").get<bool>() ? "converged" : "<b>not converged</b>") +
      ".</p>\n<table class=fit>\n" +
      Row({"parameter", "unit", "estimate", "std. error", "CI low", "CI high", "note"}, "th");
  int i = 0;
  for (const json& q : Field(f, "parameters", file, "")) {
    const std::string w = "parameters[" + std::to_string(i++) + "].";
    std::string note =
        q.value("at_bound", false) ? "at bound" : (q.value("fixed", false) ? "fixed" : "");
    h += Row({XmlEscape(Text(q, "name", file, w)), XmlEscape(q.value("unit", "")),
              Num(Number(q, "value", file, w)), OptNum(q, "std_error"), OptNum(q, "ci_low"),
              OptNum(q, "ci_high"), note});
  }
  h += "</table>\n<table>\n" +
       Row({"response", "column", "points", "R²", "MAPE %", "max APE %", "LOO MAPE %"}, "th");
  i = 0;
  for (const json& r : Field(f, "responses", file, "")) {
    const std::string w = "responses[" + std::to_string(i++) + "].";
    h += Row({XmlEscape(Text(r, "name", file, w)), XmlEscape(r.value("column", "")),
              Num(Number(r, "points", file, w)), OptNum(r, "r2"), OptNum(r, "mape"),
              OptNum(r, "max_ape"), OptNum(r, "cv_mape")});
  }
  h += "</table>\n";
  if (f.contains("warnings") && !f["warnings"].empty()) {
    h += "<ul class=warn>\n";
    for (const json& w : f["warnings"]) h += "<li>" + XmlEscape(w.get<std::string>()) + "</li>\n";
    h += "</ul>\n";
  }
  return h;
}

std::string PredictionSection(const std::string& dir) {
  const std::string file = dir + "/predictions.json";
  json d = ReadJson(file);
  std::string sweep = Text(d, "sweep", file, "");
  std::string h = "<h2>Predictions per platform</h2>\n<p>Model <code>" +
                  XmlEscape(Text(d, "model", file, "")) + "</code>, settings <code>" +
                  XmlEscape(Field(d, "settings", file, "").dump()) + "</code>, sweep over " +
                  XmlEscape(sweep) + ".</p>\n";
  int i = 0;
  for (const json& pl : Field(d, "platforms", file, "")) {
    const std::string w = "platforms[" + std::to_string(i++) + "].";
    std::string name = Text(pl, "platform", file, w);
    h += "<h3>" + XmlEscape(name) + "</h3>\n<table>\n" +
         Row({XmlEscape(sweep), "time (s)", "speedup", "t_par_comp", "t_seq_comp", "t_comm",
              "t_sync"},
             "th");
    int k = 0;
    for (const json& pt : Field(pl, "points", file, w)) {
      const std::string wp = w + "points[" + std::to_string(k++) + "].";
      std::vector<std::string> cells = {Num(Number(pt, sweep, file, wp)),
                                        Num(Number(pt, "time", file, wp)),
                                        Num(Number(pt, "speedup", file, wp))};
      for (const char* c : {"t_par_comp", "t_seq_comp", "t_comm", "t_sync"})
        cells.push_back(OptNum(pt, c));
      h += Row(cells);
    }
    h += "</table>\n";
    if (pl.contains("notes"))
      for (const json& n : pl["notes"])
        h += "<p class=note>" + XmlEscape(n.get<std::string>()) + "</p>\n";
  }
  return h;
}

// A percentage from a validation file, where null means "no measured value".
std::string Pct(const json& obj, const char* key) {
  return obj.contains(key) && obj[key].is_number() ? Num(obj[key].get<double>()) : "-";
}

// validation/summary.json (`invmw validate summary`): the totals pooled over every validation,
// and each component over the points where it is more than a share of the total, per
// validation and pooled. Empty when the pipeline wrote no summary (runs before it existed).
std::string PooledSection(const std::string& dir) {
  const std::string file = dir + "/validation/summary.json";
  if (access(file.c_str(), F_OK) != 0) return "";
  const json s = ReadJson(file);
  const std::string total = Text(s, "total", file, "");
  const double share = Number(s, "significant_share", file, "");
  auto row = [&](const std::string& response, const std::string& over, const json& f,
                 const std::string& where) {
    std::string in90 = "-";
    if (Number(f, "with_90", file, where) > 0)
      in90 = Num(Number(f, "in_90", file, where)) + " of " + Num(Number(f, "with_90", file, where));
    return Row({XmlEscape(response), XmlEscape(over), Num(Number(f, "points", file, where)),
                Pct(f, "median_abs_error_pct"), Pct(f, "noise_floor_median_abs_error_pct"),
                Pct(f, "worst_abs_error_pct"), Pct(f, "noise_floor_worst_abs_error_pct"), in90});
  };
  std::string h =
      "<h3>Pooled over the validations</h3>\n<p>The total over every point of every "
      "validation above, and each component over only the points where it is more "
      "than " +
      Num(100 * share) +
      "% of the measured total (a component of a few "
      "milliseconds can be far off and matter to no one); floors as above.</p>\n"
      "<table class=pooled>\n" +
      Row({"response", "over", "points", "median |error| %", "floor of the median %",
           "worst |error| %", "floor of the worst %", "in 90% interval"},
          "th");
  const json& all = Field(s, "all", file, "");
  h += row(total, "all validations", Field(all, "total", file, "all."), "all.total.");
  const json& vals = Field(s, "validations", file, "");
  for (const auto& [name, f] : Field(all, "components", file, "all.").items()) {
    for (size_t i = 0; i < vals.size(); ++i) {
      const std::string w = "validations[" + std::to_string(i) + "].";
      const json& c = Field(vals[i], "components", file, w);
      if (c.contains(name))
        h += row(name, Text(vals[i], "label", file, w), c[name], w + "components." + name + ".");
    }
    h += row(name, "all validations", f, "all.components." + name + ".");
  }
  return h + "</table>\n";
}

// Prediction errors: a summary row per validation and response, then every point's measured
// mean and spread next to its prediction. The numbers are those of the validation files, which
// `invmw validate` computed from the results database.
std::string ValidationSection(const std::string& dir) {
  std::vector<std::string> files = ValidationFiles(dir);
  std::string h = "<h2>Prediction errors (validation against measured runs)</h2>\n";
  if (files.empty())
    return h + "<p class=warn>No validation in " + XmlEscape(dir) +
           "/validation: this pipeline did not measure prediction errors.</p>\n";
  h += "<p>Error = (predicted &minus; measured) / measured, measured = the validation's "
       "statistic of a point's replications (median unless the file says otherwise); median and "
       "worst of |error| over the design points, each next to its noise floor (what an exact "
       "model would show given the replications' spread), and the share of points inside the "
       "90% prediction interval.</p>\n<table class=validation>\n" +
       Row({"validation", "run platform", "parameters", "response", "points", "median |error| %",
            "worst |error| %", "floor of the median %", "floor of the worst %", "in 90% interval"},
           "th");
  std::vector<json> docs;
  for (const auto& file : files) {
    json v = ReadJson(file);
    std::string label = Text(v, "label", file, "");
    const std::string total = Text(v, "total", file, "");
    std::string params = "table " + Text(v, "table", file, "");
    if (v.contains("reference") && v["reference"].is_string())
      params += " from reference " + v["reference"].get<std::string>();
    const json& summary = Field(v, "summary", file, "");
    std::vector<std::string> order = {total};  // the total first, then the components
    for (const auto& [resp, s] : summary.items())
      if (resp != total) order.push_back(resp);
    for (const auto& resp : order) {
      const std::string w = "summary." + resp + ".";
      const json& s = Field(summary, resp, file, "summary.");
      h += Row({XmlEscape(label), XmlEscape(v.value("run_platform", "")), XmlEscape(params),
                XmlEscape(resp) + " (" + XmlEscape(Text(s, "column", file, w)) + ")",
                Num(Number(s, "points", file, w)), Pct(s, "median_abs_error_pct"),
                Pct(s, "worst_abs_error_pct"), Pct(s, "noise_floor_median_abs_error_pct"),
                Pct(s, "noise_floor_worst_abs_error_pct"), Pct(s, "coverage_90")});
    }
    docs.push_back(std::move(v));
  }
  h += "</table>\n";
  h += PooledSection(dir);
  for (size_t i = 0; i < docs.size(); ++i) {
    const json& v = docs[i];
    const std::string& file = files[i];
    const std::string total = Text(v, "total", file, "");
    h += "<h3>" + XmlEscape(Text(v, "label", file, "")) +
         ": per point (total time)</h3>\n<table>\n" +
         Row({"point", "factors", "replications", "measured mean (s)", "min (s)", "max (s)",
              "predicted (s)", "error %"},
             "th");
    int k = 0;
    for (const json& pt : Field(v, "points", file, "")) {
      const std::string w = "points[" + std::to_string(k++) + "].";
      const json& t = Field(Field(pt, "responses", file, w), total, file, w + "responses.");
      std::string f;
      for (const auto& [name, value] : Field(pt, "factors", file, w).items())
        f += (f.empty() ? "" : " ") + name + "=" + Num(value.get<double>());
      h += Row({Num(Number(pt, "point", file, w)), XmlEscape(f), Pct(t, "replications"),
                Pct(t, "mean"), Pct(t, "min"), Pct(t, "max"), Pct(t, "predicted"),
                Pct(t, "error_pct")});
    }
    h += "</table>\n";
  }
  return h;
}

std::string Base64(const std::string& in) {
  static const char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v =
        (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = (unsigned char)in[i] << 16;
    out += {k[v >> 18], k[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8;
    out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
  }
  return out;
}

// The plots are embedded as images (data: URLs), not inlined as markup: a browser never runs
// scripts or event handlers of an SVG shown through <img>, nor loads what it references, so a
// plot file cannot put active content into the page. The page stays one self-contained file.
std::string Svg(const std::string& dir, const std::string& name, const std::string& caption) {
  const std::string file = dir + "/plots/" + name + ".svg";
  std::string svg = ReadFile(file);
  if (svg.find("<svg") == std::string::npos) throw ReportError(file + ": no <svg> element");
  return "<figure><img src=\"data:image/svg+xml;base64," + Base64(svg) + "\" alt=\"" +
         XmlEscape(caption) + "\"><figcaption>" + XmlEscape(caption) + "</figcaption></figure>\n";
}

std::string BuildPage(const std::string& dir) {
  // Name every missing input at once: a half-finished pipeline usually lacks several.
  std::string missing;
  for (const char* f :
       {"profile/profile.json", "fit.json", "predictions.json", "plots/measured-vs-predicted.svg",
        "plots/breakdown.svg", "plots/predict.svg"}) {
    if (!std::ifstream(dir + "/" + f)) missing += (missing.empty() ? "" : ", ") + dir + "/" + f;
  }
  if (!missing.empty())
    throw ReportError("missing input " + missing +
                      " (run scripts/pipeline.sh into this directory first)");
  // Sections in page order, one statement each (the order of evaluation of a + b is unspecified).
  std::string body = ProfileSection(dir);
  body += FitSection(dir);
  body += Svg(dir, "measured-vs-predicted", "Measured vs predicted time per design point");
  body += Svg(dir, "breakdown", "Measured time components per server count");
  body += PredictionSection(dir);
  body += Svg(dir, "predict", "Predicted time and speedup per platform");
  body += ValidationSection(dir);
  body += ReplaySection(dir);
  body += ModelSearchSection(dir);  // optional: model-search.json (issue 21)
  return std::string(
             "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
             "<title>invmw pipeline report</title>\n<style>\n"
             "body{font-family:sans-serif;max-width:70em;margin:auto}\n"
             "table{border-collapse:collapse;margin:.5em 0}\n"
             "td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}\n"
             "th{background:#eee} td:first-child{text-align:left}\n"
             "figure img{max-width:100%;height:auto} .warn{color:#a50}\n"
             "</style></head><body>\n<h1>invmw pipeline report</h1>\n<p>Directory: <code>") +
         XmlEscape(dir) + "</code></p>\n" + body + "</body></html>\n";
}

}  // namespace

std::string BuildHtmlReport(const std::string& dir) {
  try {
    return BuildPage(dir);
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong type deep in an optional part (a note that is not text, ...).
    throw ReportError(dir + ": unexpected content in a pipeline JSON file: " + e.what());
  }
}

}  // namespace invmw::report
