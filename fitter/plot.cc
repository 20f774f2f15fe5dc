#include "fitter/plot.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "fitter/file_io.h"

namespace invmw::fit {

namespace {

constexpr const char* kContractComponents[] = {"t_par_comp", "t_seq_comp", "t_comm", "t_sync",
                                               "t_idle"};
constexpr const char* kContractResponses[] = {"t_wall", "t_par_comp", "t_seq_comp",
                                              "t_comm", "t_sync",     "t_idle"};

std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A gnuplot single-quoted string: only the quote itself needs escaping (by doubling).
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A data-file string cell (gnuplot reads "..." as one column).
std::string DatString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? '\'' : c;
  return out + "\"";
}

std::string Header(const std::string& what, const std::string& base,
                   const std::string& command_line) {
  std::string h = "# " + what + ", written by invmw.\n";
  if (!command_line.empty()) h += "# command: " + command_line + "\n";
  h += "# Rerun in this directory: gnuplot " + base + ".gp  (reads " + base +
       ".dat, writes the images)\n";
  return h;
}

// The terminal line and output file of each image; `body` is drawn once per terminal.
std::string ForEachTerminal(const std::vector<std::string>& terminals, const std::string& base,
                            int width, int height, const std::string& body) {
  std::ostringstream s;
  for (const std::string& t : terminals) {
    std::string size = std::to_string(width) + "," + std::to_string(height);
    if (t == "svg") {
      s << "\nset terminal svg size " << size
        << " dynamic noenhanced font 'Sans,12' background rgb 'white'\n"
        << "set output " << Quote(base + ".svg") << "\n";
    } else if (t == "pngcairo") {
      s << "\nset terminal pngcairo size " << size
        << " noenhanced font 'Sans,10' background rgb 'white'\n"
        << "set output " << Quote(base + ".png") << "\n";
    } else {
      s << "\nset terminal png size " << size << " noenhanced background rgb 'white'\n"
        << "set output " << Quote(base + ".png") << "\n";
    }
    s << body << "set output\n";
  }
  return s.str();
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v)
    if (!std::isnan(x)) s += x, ++n;
  return n ? s / n : NAN;
}

const nlohmann::json& Field(const nlohmann::json& j, const char* key, const std::string& source,
                            const std::string& expected) {
  if (!j.is_object() || !j.contains(key))
    throw PlotError(source + ": no field '" + key + "' (expected " + expected + ")");
  return j.at(key);
}

double Number(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !(j.at(key).is_number() || j.at(key).is_null()))
    throw PlotError(where + ": field '" + key + "' is missing or not a number");
  return j.at(key).is_null() ? NAN : j.at(key).get<double>();
}

// A data source as a plot title shows it: a table's source is a file's full path (with " design
// D platform P" for a results database), which the title's width cuts off, so the title names
// the file by its base name. The full path stays in the fit's JSON and the report's text.
std::string ShortSource(const std::string& source) {
  const size_t design = source.find(" design ");
  std::string path = source.substr(0, design);
  const size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash + 1 < path.size()) path = path.substr(slash + 1);
  return design == std::string::npos ? path : path + source.substr(design);
}

}  // namespace

BreakdownData BreakdownFromTable(const DataTable& data, const std::string& x_name,
                                 const std::vector<std::pair<std::string, double>>& where,
                                 std::vector<std::string> components,
                                 const std::string& total_name) {
  int xc = data.Column(x_name);
  if (xc < 0) {
    throw PlotError(data.source + ": no column '" + x_name + "' to put on the x axis");
  }
  if (components.empty()) {
    for (const char* c : kContractComponents)
      if (data.Column(c) >= 0) components.push_back(c);
    if (components.empty())
      throw PlotError(data.source +
                      ": none of the time components t_par_comp, t_seq_comp, "
                      "t_comm, t_sync, t_idle is in the data (give --component)");
  }
  std::vector<int> cc;
  for (const auto& c : components) {
    int k = data.Column(c);
    if (k < 0) throw PlotError(data.source + ": no column '" + c + "' (asked as a component)");
    cc.push_back(k);
  }
  int tc = total_name.empty() ? -1 : data.Column(total_name);
  std::vector<std::pair<int, double>> filters;
  for (const auto& [name, value] : where) {
    int k = data.Column(name);
    if (k < 0) throw PlotError(data.source + ": no column '" + name + "' (in --where)");
    filters.emplace_back(k, value);
  }
  // Columns that must agree within a bar: everything that is not a measurement.
  std::set<std::string> measured(data.response_columns.begin(), data.response_columns.end());
  for (const char* r : kContractResponses) measured.insert(r);
  measured.insert(components.begin(), components.end());
  if (!total_name.empty()) measured.insert(total_name);
  std::vector<int> factor_cols;
  for (size_t k = 0; k < data.columns.size(); ++k)
    if (static_cast<int>(k) != xc && !measured.count(data.columns[k]))
      factor_cols.push_back(static_cast<int>(k));

  std::map<double, std::vector<size_t>> groups;
  for (size_t i = 0; i < data.rows.size(); ++i) {
    const auto& row = data.rows[i];
    bool keep = !std::isnan(row[xc]);
    for (const auto& [k, v] : filters) keep = keep && std::fabs(row[k] - v) <= 1e-9 * std::fabs(v);
    if (keep) groups[row[xc]].push_back(i);
  }
  if (groups.empty()) throw PlotError(data.source + ": no rows left after the --where filters");
  // Another factor varying inside a bar would silently average different experiments.
  for (int k : factor_cols) {
    std::set<double> values;
    for (const auto& [x, rows] : groups) {
      std::set<double> here;
      for (size_t i : rows)
        if (!std::isnan(data.rows[i][k])) here.insert(data.rows[i][k]);
      if (here.size() > 1) {
        std::string vals;
        for (double v : here) vals += (vals.empty() ? "" : ", ") + Num(v);
        throw PlotError(data.source + ": the rows with " + x_name + " = " + Num(x) +
                        " differ in factor '" + data.columns[k] + "' (" + vals +
                        "); choose one with --where " + data.columns[k] + "=VALUE");
      }
    }
  }
  BreakdownData d;
  d.x_name = x_name;
  d.components = components;
  d.total_name = tc >= 0 ? total_name : "";
  for (const auto& [x, rows] : groups) {
    d.x.push_back(x);
    std::vector<double> vals;
    for (int k : cc) {
      std::vector<double> v;
      for (size_t i : rows) v.push_back(data.rows[i][k]);
      double m = Mean(v);
      vals.push_back(std::isnan(m) ? 0 : m);  // a component never measured draws no bar
    }
    d.values.push_back(vals);
    if (tc >= 0) {
      std::vector<double> v;
      for (size_t i : rows) v.push_back(data.rows[i][tc]);
      d.total.push_back(Mean(v));
    }
    d.runs.push_back(static_cast<int>(rows.size()));
  }
  std::string filter_text;
  for (const auto& [name, value] : where) filter_text += " " + name + "=" + Num(value);
  d.title = "time breakdown, " + ShortSource(data.source) +
            (filter_text.empty() ? "" : "," + filter_text);
  return d;
}

BreakdownData BreakdownFromPrediction(const nlohmann::json& j, const std::string& platform,
                                      const std::string& source) {
  const std::string expected = "the output of `invmw predict --json`";
  const auto& platforms = Field(j, "platforms", source, expected);
  std::string sweep = Field(j, "sweep", source, expected).get<std::string>();
  const nlohmann::json* chosen = nullptr;
  std::string have;
  for (const auto& p : platforms) {
    std::string name = Field(p, "platform", source, expected).get<std::string>();
    have += (have.empty() ? "" : ", ") + name;
    if (name == platform || (platform.empty() && !chosen)) chosen = &p;
  }
  if (!chosen) throw PlotError(source + ": no platform '" + platform + "' (have: " + have + ")");
  if (platform.empty() && platforms.size() > 1)
    throw PlotError(source + ": several platforms (" + have + "); choose one with --platform");
  BreakdownData d;
  d.x_name = sweep;
  const auto& points = Field(*chosen, "points", source, expected);
  if (points.empty()) throw PlotError(source + ": no predicted points");
  for (const auto& [key, v] : points.front().items())
    if (key != sweep && key != "time" && key != "speedup") d.components.push_back(key);
  if (d.components.empty())
    throw PlotError(source + ": the model has no components to stack (only a total time)");
  d.total_name = "time";
  for (const auto& pt : points) {
    d.x.push_back(Number(pt, sweep.c_str(), source));
    std::vector<double> vals;
    for (const auto& c : d.components) vals.push_back(Number(pt, c.c_str(), source));
    d.values.push_back(vals);
    d.total.push_back(Number(pt, "time", source));
    d.runs.push_back(0);
  }
  d.title = "predicted time breakdown, model " + j.value("model", std::string("?")) + " on " +
            (*chosen)["platform"].get<std::string>();
  return d;
}

MeasuredPredictedData MeasuredPredictedFromFit(
    const nlohmann::json& j, const std::string& response, const std::string& source,
    const std::vector<std::pair<std::string, double>>& where) {
  const std::string expected = "the output of `invmw fit --json`";
  const auto& responses = Field(j, "responses", source, expected);
  const auto& residuals = Field(j, "residuals", source, expected);
  std::string name;
  std::string have;
  for (const auto& r : responses) {
    std::string n = r.value("name", ""), c = r.value("column", "");
    if (n == "all") continue;
    have += (have.empty() ? "" : ", ") + n + " (" + c + ")";
    if (name.empty() && (response.empty() || response == n || response == c)) name = n;
  }
  if (name.empty())
    throw PlotError(source + ": the fit has no response '" + response + "' (have: " + have + ")");
  // Group rows by design point; label each point by the factors that vary between points.
  struct Point {
    std::vector<double> measured;
    double predicted = NAN;
    nlohmann::json factors;
  };
  std::map<long, Point> points;
  for (const auto& r : residuals) {
    if (r.value("response", "") != name) continue;
    bool keep = true;
    for (const auto& [f, v] : where) {
      const nlohmann::json* fv =
          r.contains("factors") && r["factors"].contains(f) ? &r["factors"][f] : nullptr;
      if (!fv || !fv->is_number())
        throw PlotError(source + ": the fit's design points have no factor '" + f + "'");
      keep = keep && std::fabs(fv->get<double>() - v) <= 1e-9 * std::fabs(v);
    }
    if (!keep) continue;
    long id = r.contains("point") ? r["point"].get<long>() : r.value("row", 0L);
    Point& p = points[id];
    p.measured.push_back(Number(r, "measured", source));
    p.predicted = Number(r, "predicted", source);
    if (r.contains("factors")) p.factors = r["factors"];
  }
  if (points.empty())
    throw PlotError(source + ": no residuals of response '" + name + "'" +
                    (where.empty() ? "" : " at the --where values"));
  std::vector<std::string> varying;
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& [id, p] : points)
    if (p.factors.is_object())
      for (const auto& [k, v] : p.factors.items()) seen[k].insert(v.dump());
  for (const auto& [k, vals] : seen)
    if (vals.size() > 1) varying.push_back(k);
  // The process count reads best last (it changes fastest in the standard order).
  std::stable_partition(varying.begin(), varying.end(),
                        [](const std::string& k) { return k != "p"; });
  MeasuredPredictedData d;
  d.response = name;
  for (const auto& [id, p] : points) {
    std::string label;
    for (const auto& k : varying) {
      if (!p.factors.contains(k)) continue;
      const auto& v = p.factors[k];
      label +=
          (label.empty() ? "" : " ") + k + "=" + (v.is_number() ? Num(v.get<double>()) : v.dump());
    }
    d.labels.push_back(label.empty() ? "point " + std::to_string(id) : label);
    d.measured_mean.push_back(Mean(p.measured));
    d.measured_min.push_back(*std::min_element(p.measured.begin(), p.measured.end()));
    d.measured_max.push_back(*std::max_element(p.measured.begin(), p.measured.end()));
    d.predicted.push_back(p.predicted);
    d.runs.push_back(static_cast<int>(p.measured.size()));
  }
  std::string filter_text;
  for (const auto& [f, v] : where) filter_text += " " + f + "=" + Num(v);
  d.title = "measured vs predicted " + name + ", model " + j.value("model", std::string("?")) +
            ", " + ShortSource(j.value("data", std::string(""))) +
            (filter_text.empty() ? "" : "," + filter_text);
  return d;
}

PredictionPlotData PredictionFromJson(const nlohmann::json& j, const std::string& source) {
  const std::string expected = "the output of `invmw predict --json`";
  PredictionPlotData d;
  d.x_name = Field(j, "sweep", source, expected).get<std::string>();
  for (const auto& p : Field(j, "platforms", source, expected)) {
    d.platforms.push_back(Field(p, "platform", source, expected).get<std::string>());
    std::vector<double> xs, t, s;
    for (const auto& pt : Field(p, "points", source, expected)) {
      xs.push_back(Number(pt, d.x_name.c_str(), source));
      t.push_back(Number(pt, "time", source));
      s.push_back(Number(pt, "speedup", source));
    }
    if (d.x.empty()) {
      d.x = xs;
    } else if (xs != d.x) {
      throw PlotError(source + ": platform " + d.platforms.back() +
                      " was predicted over other sweep values than " + d.platforms.front());
    }
    d.time.push_back(t);
    d.speedup.push_back(s);
  }
  if (d.platforms.empty() || d.x.empty()) throw PlotError(source + ": no predicted points");
  d.title = "predicted " + j.value("model", std::string("?")) + " time and speedup";
  return d;
}

std::string BreakdownDat(const BreakdownData& d) {
  std::ostringstream s;
  s << "# " << d.x_name;
  for (const auto& c : d.components) s << " " << c;
  if (!d.total_name.empty()) s << " " << d.total_name;
  s << " runs\n";
  for (size_t i = 0; i < d.x.size(); ++i) {
    s << Num(d.x[i]);
    for (double v : d.values[i]) s << " " << Num(v);
    if (!d.total_name.empty()) s << " " << Num(d.total[i]);
    s << " " << d.runs[i] << "\n";
  }
  return s.str();
}

std::string BreakdownScript(const BreakdownData& d, const std::string& base,
                            const std::vector<std::string>& terminals) {
  std::ostringstream s;
  s << "set title " << Quote(d.title) << "\n"
    << "set style data histograms\nset style histogram rowstacked\n"
    << "set style fill solid 0.85 border rgb 'black'\nset boxwidth 0.7\n"
    << "set key outside right top\nset grid ytics\nset yrange [0:*]\n"
    << "set xlabel " << Quote(d.x_name) << "\nset ylabel 'time [s]'\n";
  std::ostringstream body;
  body << "plot " << Quote(base + ".dat") << " using 2:xtic(1) title " << Quote(d.components[0]);
  for (size_t c = 1; c < d.components.size(); ++c)
    body << ", \\\n     '' using " << c + 2 << " title " << Quote(d.components[c]);
  if (!d.total_name.empty()) {
    // Histogram bars sit at x = 0, 1, ...: the row number places the total on its bar.
    body << ", \\\n     '' using 0:" << d.components.size() + 2
         << " with points pt 7 ps 1.2 lc rgb 'black' title " << Quote(d.total_name);
  }
  body << "\n";
  int width = std::max(800, 160 + 40 * static_cast<int>(d.x.size()));
  return s.str() + ForEachTerminal(terminals, base, width, 520, body.str());
}

std::string MeasuredPredictedDat(const MeasuredPredictedData& d) {
  std::ostringstream s;
  s << "# index label " << d.response << "_measured_mean " << d.response << "_measured_min "
    << d.response << "_measured_max " << d.response << "_predicted error_percent runs\n";
  for (size_t i = 0; i < d.labels.size(); ++i) {
    double err = 100 * (d.predicted[i] - d.measured_mean[i]) / d.measured_mean[i];
    s << i << " " << DatString(d.labels[i]) << " " << Num(d.measured_mean[i]) << " "
      << Num(d.measured_min[i]) << " " << Num(d.measured_max[i]) << " " << Num(d.predicted[i])
      << " " << Num(err) << " " << d.runs[i] << "\n";
  }
  return s.str();
}

std::string MeasuredPredictedScript(const MeasuredPredictedData& d, const std::string& base,
                                    const std::vector<std::string>& terminals) {
  std::ostringstream s;
  s << "set title " << Quote(d.title) << "\n"
    << "set style fill solid 0.7 border rgb 'black'\nset boxwidth 0.4\n"
    << "set key outside right top\nset grid ytics\n"
    << (d.log_y ? "set logscale y\n" : "set yrange [0:*]\n")
    << "set xrange [-0.7:" << d.labels.size() - 0.3 << "]\n"
    << "set xtics rotate by -60 font ',8'\n"
    << "set xlabel 'design point'\nset ylabel " << Quote(d.response + " [s]") << "\n";
  std::string dat = Quote(base + ".dat");
  std::ostringstream body;
  body << "plot " << dat << " using 1:(NaN):xtic(2) notitle, \\\n"
       << "     '' using ($1-0.2):3 with boxes lc rgb '#4477aa' title 'measured (mean)', \\\n"
       << "     '' using ($1-0.2):3:4:5 with yerrorbars pt 0 lc rgb 'black' "
          "title 'measured min..max', \\\n"
       << "     '' using ($1+0.2):6 with boxes lc rgb '#ee6677' title 'predicted'\n";
  int width = std::max(800, 200 + 18 * static_cast<int>(d.labels.size()));
  return s.str() + ForEachTerminal(terminals, base, width, 600, body.str());
}

std::string PredictionDat(const PredictionPlotData& d) {
  std::ostringstream s;
  s << "# " << d.x_name;
  for (const auto& p : d.platforms) s << " time:" << p << " speedup:" << p;
  s << "\n";
  for (size_t i = 0; i < d.x.size(); ++i) {
    s << Num(d.x[i]);
    for (size_t k = 0; k < d.platforms.size(); ++k)
      s << " " << Num(d.time[k][i]) << " " << Num(d.speedup[k][i]);
    s << "\n";
  }
  return s.str();
}

std::string PredictionScript(const PredictionPlotData& d, const std::string& base,
                             const std::vector<std::string>& terminals) {
  std::string names;
  for (const auto& p : d.platforms) names += (names.empty() ? "" : " ") + p;
  std::ostringstream s;
  s << "names = " << Quote(names) << "  # column pairs: time, speedup per platform\n"
    << "set key top left\nset grid\nset xlabel " << Quote(d.x_name) << "\n";
  std::string dat = Quote(base + ".dat");
  std::ostringstream body;
  body << "set multiplot layout 1,2 title " << Quote(d.title) << "\n"
       << "set title 'predicted time'\nset ylabel 'time [s]'\nset yrange [0:*]\n"
       << "plot for [i=1:words(names)] " << dat
       << " using 1:(column(2*i)) with linespoints lw 2 title word(names, i)\n"
       << "set title 'speedup (to " << d.x_name << " = " << Num(d.x.front()) << ")'\n"
       << "set ylabel 'speedup'\n"
       << "plot for [i=1:words(names)] " << dat
       << " using 1:(column(2*i+1)) with linespoints lw 2 title word(names, i)";
  if (d.x.front() > 0) {
    body << ", \\\n     x/" << Num(d.x.front())
         << " with lines dt 2 lc rgb 'gray' title 'proportional'";
  }
  body << "\nunset multiplot\n";
  return s.str() + ForEachTerminal(terminals, base, 1100, 480, body.str());
}

std::vector<std::string> Terminals(const std::vector<std::string>& formats) {
  std::vector<std::string> out;
  for (const auto& f : formats) {
    if (f == "svg") {
      out.push_back("svg");
    } else if (f == "png") {
      // Cairo antialiases; the libgd png terminal is the fallback of minimal gnuplot builds.
      static const bool cairo = [] {
        FILE* p = popen("gnuplot -e 'set terminal' 2>&1", "r");
        if (!p) return false;
        std::string text;
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
        pclose(p);
        return text.find("pngcairo") != std::string::npos;
      }();
      out.push_back(cairo ? "pngcairo" : "png");
    } else {
      throw PlotError("unknown image format '" + f + "' (expected svg or png)");
    }
  }
  return out;
}

namespace {

// Runs `gnuplot SCRIPT` in `dir`, returning what it printed; throws with that text on failure.
std::string RunGnuplot(const std::string& dir, const std::string& script) {
  int fds[2];
  if (pipe(fds) != 0) throw PlotError("cannot create a pipe for gnuplot");
  pid_t pid = fork();
  if (pid < 0) throw PlotError("cannot start gnuplot (fork failed)");
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw PlotError("gnuplot is not installed (Debian: gnuplot-nox); " + dir + "/" + script +
                    " and its data are written, run it where gnuplot is");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw PlotError("gnuplot failed on " + dir + "/" + script + ":\n" + text);
  return text;
}

template <typename Data>
PlotFiles RenderWith(const Data& d, const PlotOptions& o, std::string (*dat)(const Data&),
                     std::string (*script)(const Data&, const std::string&,
                                           const std::vector<std::string>&),
                     const char* what) {
  namespace fs = std::filesystem;
  if (o.out.empty()) throw PlotError("no output name (--out DIR/NAME)");
  fs::path out(o.out);
  for (const char* ext : {".svg", ".png", ".gp", ".dat"})
    if (out.extension() == ext) out.replace_extension();
  fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  std::string base = out.filename().string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw PlotError(dir.string() + ": cannot create directory: " + ec.message());
  std::vector<std::string> terms = Terminals(o.formats);
  PlotFiles f;
  f.data = (dir / (base + ".dat")).string();
  f.script = (dir / (base + ".gp")).string();
  auto write = [](const std::string& path, const std::string& text) {
    try {
      WriteFileAtomic(path, text);
    } catch (const FileError& e) {
      throw PlotError(e.what());
    }
  };
  write(f.data, dat(d));
  write(f.script, Header(what, base, o.command_line) + script(d, base, terms));
  for (const auto& t : terms)
    f.images.push_back((dir / (base + (t == "svg" ? ".svg" : ".png"))).string());
  if (o.render) f.gnuplot_messages = RunGnuplot(dir.string(), base + ".gp");
  return f;
}

}  // namespace

PlotFiles Render(const BreakdownData& d, const PlotOptions& o) {
  return RenderWith(d, o, &BreakdownDat, &BreakdownScript, "Time breakdown (stacked components)");
}
PlotFiles Render(const MeasuredPredictedData& d, const PlotOptions& o) {
  return RenderWith(d, o, &MeasuredPredictedDat, &MeasuredPredictedScript,
                    "Measured vs predicted per design point");
}
PlotFiles Render(const PredictionPlotData& d, const PlotOptions& o) {
  return RenderWith(d, o, &PredictionDat, &PredictionScript,
                    "Predicted time and speedup per platform");
}

}  // namespace invmw::fit
