#include "experiments/effects/factorial_layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "experiments/effects/sign_table.h"

namespace invmw::effects {
namespace {

// A factor as seen in the rows, before its levels are ordered.
struct RawFactor {
  std::string name;
  bool all_numeric = true;
  std::vector<std::string> labels;  // first-appearance order
  std::map<std::string, double> numbers;
};

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace

std::string LevelLabel(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return value.dump();
  const double v = value.get<double>();
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {  // shortest form that reads back to the same double
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string DescribeCell(const Layout& layout, size_t cell) {
  std::vector<std::string> parts;
  for (size_t f = 0; f < layout.factors.size(); ++f)
    parts.push_back(layout.factors[f].name + "=" + layout.factors[f].levels[layout.cells[cell][f]]);
  return Join(parts, ", ");
}

std::string TermName(const Layout& layout, uint32_t mask) {
  std::vector<std::string> parts;
  for (size_t f = 0; f < layout.factors.size(); ++f)
    if (mask & (1u << f)) parts.push_back(layout.factors[f].name);
  return Join(parts, "*");
}

namespace {

// The rows of `platform` ("": all). Several platforms: either the design varies the platform
// from point to point (then it is a factor like any other, *platform_factor) or the same points
// were run on several platforms, which cannot be analysed together without saying which.
bool SelectRuns(const std::vector<Run>& rows, const std::string& platform, Layout* layout,
                std::vector<const Run*>* selected, bool* platform_factor, std::string* error) {
  std::set<std::string> platforms;
  for (const Run& r : rows) {
    if (!platform.empty() && r.platform != platform) continue;
    selected->push_back(&r);
    platforms.insert(r.platform);
  }
  if (selected->empty()) {
    *error = platform.empty() ? "no runs" : "no runs on platform '" + platform + "'";
    return false;
  }
  *platform_factor = false;
  if (platforms.size() > 1) {
    std::map<int64_t, std::string> point_platform;
    for (const Run* r : *selected) {
      auto [it, inserted] = point_platform.emplace(r->point, r->platform);
      if (!inserted && it->second != r->platform) {
        *error = "the design's points were run on several platforms (" +
                 Join(std::vector<std::string>(platforms.begin(), platforms.end()), ", ") +
                 "); choose one with --platform";
        return false;
      }
    }
    *platform_factor = true;
  } else {
    layout->platform = *platforms.begin();
  }
  return true;
}

// Factors in the order of the first row; every row must name the same ones. (*labels)[i] holds
// run i's level label of each raw factor.
bool ReadFactors(const std::vector<const Run*>& selected, bool platform_factor,
                 std::vector<RawFactor>* raw, std::vector<std::vector<std::string>>* labels,
                 std::string* error) {
  const Run& first = *selected.front();
  for (auto it = first.factors.begin(); it != first.factors.end(); ++it)
    raw->push_back({it.key(), true, {}, {}});
  if (platform_factor && !first.factors.contains("platform"))
    raw->push_back({"platform", false, {}, {}});
  labels->assign(selected.size(), {});
  for (size_t i = 0; i < selected.size(); ++i) {
    const Run& r = *selected[i];
    const std::string where = "run id " + std::to_string(r.id) + " (point " +
                              std::to_string(r.point) + ", replication " +
                              std::to_string(r.replication) + ")";
    size_t named = r.factors.size() + (platform_factor && !r.factors.contains("platform"));
    if (named != raw->size()) {
      *error = where + " has factors " + r.factors.dump() + ", the first run of the design has " +
               first.factors.dump();
      return false;
    }
    for (RawFactor& f : *raw) {
      std::string label;
      if (r.factors.contains(f.name)) {
        const auto& v = r.factors[f.name];
        label = LevelLabel(v);
        if (v.is_number()) {
          f.numbers[label] = v.get<double>();
        } else {
          f.all_numeric = false;
        }
      } else if (platform_factor && f.name == "platform") {
        label = r.platform;
        f.all_numeric = false;
      } else {
        *error = where + " lacks factor '" + f.name + "' (factors " + r.factors.dump() + ")";
        return false;
      }
      if (std::find(f.labels.begin(), f.labels.end(), label) == f.labels.end())
        f.labels.push_back(label);
      (*labels)[i].push_back(label);
    }
  }
  return true;
}

// Orders levels and keeps only the factors that vary (*kept: raw index of each layout factor).
bool OrderLevels(std::vector<RawFactor>& raw, Layout* layout, std::vector<int>* kept,
                 std::string* error) {
  for (size_t fi = 0; fi < raw.size(); ++fi) {
    RawFactor& f = raw[fi];
    if (f.labels.size() < 2) {
      layout->constant_factors.push_back(f.name + "=" + f.labels[0]);
      continue;
    }
    Factor out;
    out.name = f.name;
    out.numeric = f.all_numeric;
    out.levels = f.labels;
    if (out.numeric) {
      std::sort(
          out.levels.begin(), out.levels.end(),
          [&](const std::string& a, const std::string& b) { return f.numbers[a] < f.numbers[b]; });
      for (const auto& l : out.levels) out.values.push_back(f.numbers[l]);
    }
    layout->factors.push_back(out);
    kept->push_back(static_cast<int>(fi));
  }
  if (!layout->constant_factors.empty())
    layout->notes.push_back("factors with a single level are left out: " +
                            Join(layout->constant_factors, ", "));
  if (layout->factors.empty()) {
    *error = "no factor varies between the design's runs (" + Join(layout->constant_factors, ", ") +
             "): there are no effects to estimate";
    return false;
  }
  const size_t k = layout->factors.size();
  if (k > 20) {
    *error = std::to_string(k) + " factors vary; at most 20 are supported";
    return false;
  }
  return true;
}

// What became of one design point (a level tuple) in the rows.
struct PointInfo {
  std::vector<size_t> ok;        // indices into the selected runs
  std::vector<int64_t> indices;  // point indices of its rows
  std::string last_error;
};
using Points = std::map<std::vector<int>, PointInfo>;

// The design points present, keyed by level tuple.
bool GroupPoints(const std::vector<const Run*>& selected,
                 const std::vector<std::vector<std::string>>& labels, const std::vector<int>& kept,
                 const Layout& layout, Points* points, std::string* error) {
  const size_t k = layout.factors.size();
  std::map<int64_t, std::vector<int>> index_to_levels;
  for (size_t i = 0; i < selected.size(); ++i) {
    std::vector<int> levels(k);
    for (size_t f = 0; f < k; ++f) {
      const auto& lv = layout.factors[f].levels;
      levels[f] =
          static_cast<int>(std::find(lv.begin(), lv.end(), labels[i][kept[f]]) - lv.begin());
    }
    const Run& r = *selected[i];
    auto [it, inserted] = index_to_levels.emplace(r.point, levels);
    if (!inserted && it->second != levels) {
      *error = "run id " + std::to_string(r.id) + ": point " + std::to_string(r.point) +
               " has other factor values than an earlier run of the same point";
      return false;
    }
    PointInfo& p = (*points)[levels];
    if (r.ok) {
      p.ok.push_back(i);
    } else if (!r.error.empty()) {
      p.last_error = r.error;
    } else {
      p.last_error = "status failed, no error recorded";
    }
    p.indices.push_back(r.point);
  }
  return true;
}

// The points present in standard order: first factor varies fastest.
std::vector<std::vector<int>> StandardOrder(const Points& points, const Layout& layout) {
  const size_t k = layout.factors.size();
  std::vector<std::vector<int>> cells;
  for (const auto& [levels, info] : points) cells.push_back(levels);
  auto key = [&](const std::vector<int>& c) {
    uint64_t kv = 0, radix = 1;
    for (size_t f = 0; f < k; ++f) {
      kv += c[f] * radix;
      radix *= layout.factors[f].levels.size();
    }
    return kv;
  };
  std::sort(cells.begin(), cells.end(),
            [&](const auto& a, const auto& b) { return key(a) < key(b); });
  return cells;
}

// "factor=level, ..." of a level tuple.
std::string DescribeLevels(const Layout& layout, const std::vector<int>& c) {
  std::vector<std::string> parts;
  for (size_t f = 0; f < layout.factors.size(); ++f)
    parts.push_back(layout.factors[f].name + "=" + layout.factors[f].levels[c[f]]);
  return Join(parts, ", ");
}

// The error for points that are neither the full factorial nor a regular fraction: the first
// few level combinations that no row has.
std::string MissingPointsError(const Points& points, const Layout& layout, size_t present,
                               double full_size, bool two_level) {
  const size_t k = layout.factors.size();
  std::vector<std::string> missing;
  size_t count = 0;
  std::vector<int> c(k, 0);
  for (;;) {
    if (!points.count(c)) {
      if (missing.size() < 5) missing.push_back("(" + DescribeLevels(layout, c) + ")");
      ++count;
    }
    size_t f = 0;
    while (f < k && ++c[f] == static_cast<int>(layout.factors[f].levels.size())) c[f++] = 0;
    if (f == k) break;
  }
  return "missing design point" + std::string(count > 1 ? "s" : "") + ": " + Join(missing, ", ") +
         (count > missing.size() ? " and " + std::to_string(count - missing.size()) + " more"
                                 : "") +
         " (no run in the database; the " + std::to_string(present) +
         " points present are not the full factorial of " +
         LevelLabel(nlohmann::ordered_json(full_size)) + " points" +
         (two_level ? " nor a regular 2^(k-p) fraction)" : ")");
}

// Whether the points form the full factorial or a regular two-level fraction.
bool ClassifyDesign(const std::vector<std::vector<int>>& cells, const Points& points,
                    Layout* layout, std::string* error) {
  const size_t k = layout->factors.size();
  double full_size = 1;
  bool two_level = true;
  for (const Factor& f : layout->factors) {
    full_size *= static_cast<double>(f.levels.size());
    two_level = two_level && f.levels.size() == 2;
  }
  layout->two_level = two_level;
  layout->full = static_cast<double>(cells.size()) == full_size;
  if (layout->full) return true;
  std::vector<AliasGroup> groups;
  bool fraction =
      two_level && GroupSignColumns(cells, static_cast<int>(k), &groups, &layout->fraction);
  if (fraction) return true;
  *error = MissingPointsError(points, *layout, cells.size(), full_size, two_level);
  return false;
}

// Every point present must have a successful run; the layout keeps those runs.
bool TakeSuccessfulRuns(const std::vector<std::vector<int>>& cells, Points& points,
                        const std::vector<const Run*>& selected, Layout* layout,
                        std::string* error) {
  for (const auto& c : cells) {
    const PointInfo& p = points[c];
    if (p.ok.empty()) {
      *error = "missing design point " + std::to_string(p.indices.front()) + " (" +
               DescribeLevels(*layout, c) + "): no successful run (" +
               std::to_string(p.indices.size()) + " failed; last error: " + p.last_error + ")";
      return false;
    }
  }
  layout->cells = cells;
  for (const auto& c : cells) {
    std::vector<size_t> idx;
    for (size_t i : points[c].ok) {
      idx.push_back(layout->runs.size());
      layout->runs.push_back(*selected[i]);
    }
    layout->cell_runs.push_back(idx);
  }
  return true;
}

}  // namespace

bool BuildLayout(const std::vector<Run>& rows, const std::string& platform, Layout* layout,
                 std::string* error) {
  *layout = Layout();
  std::vector<const Run*> selected;
  bool platform_factor = false;
  if (!SelectRuns(rows, platform, layout, &selected, &platform_factor, error)) return false;
  std::vector<RawFactor> raw;
  std::vector<std::vector<std::string>> labels;
  if (!ReadFactors(selected, platform_factor, &raw, &labels, error)) return false;
  std::vector<int> kept;
  if (!OrderLevels(raw, layout, &kept, error)) return false;
  Points points;
  if (!GroupPoints(selected, labels, kept, *layout, &points, error)) return false;
  const std::vector<std::vector<int>> cells = StandardOrder(points, *layout);
  if (!ClassifyDesign(cells, points, layout, error)) return false;
  return TakeSuccessfulRuns(cells, points, selected, layout, error);
}

std::vector<std::string> ResponseNames(const Layout& layout) {
  std::vector<std::string> names;
  for (const Run& r : layout.runs)
    for (const auto& n : r.response_order)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  return names;
}

bool CollectResponse(const Layout& layout, const std::string& response,
                     const CollectOptions& options, Observations* obs, std::string* error) {
  *obs = Observations();
  obs->response = response;
  obs->log10 = options.log10;
  std::vector<size_t> counts;
  for (size_t c = 0; c < layout.cells.size(); ++c) {
    std::vector<std::pair<int64_t, double>> values;  // (replication, y)
    for (size_t ri : layout.cell_runs[c]) {
      const Run& r = layout.runs[ri];
      auto it = r.responses.find(response);
      if (it == r.responses.end()) continue;
      double y = it->second;
      if (!std::isfinite(y)) continue;
      if (options.log10) {
        if (y <= 0) {
          *error = "response '" + response + "' is " + LevelLabel(nlohmann::ordered_json(y)) +
                   " at point " + std::to_string(r.point) + " (" + DescribeCell(layout, c) +
                   "), replication " + std::to_string(r.replication) +
                   ": --log needs positive values";
          return false;
        }
        y = std::log10(y);
      }
      values.emplace_back(r.replication, y);
    }
    std::sort(values.begin(), values.end());
    if (values.empty()) {
      *error = "response '" + response + "' is missing at design point " +
               std::to_string(layout.runs[layout.cell_runs[c][0]].point) + " (" +
               DescribeCell(layout, c) + "): no successful run recorded it";
      return false;
    }
    if (options.replications > 0) {
      if (values.size() < static_cast<size_t>(options.replications)) {
        *error = "design point " + std::to_string(layout.runs[layout.cell_runs[c][0]].point) +
                 " (" + DescribeCell(layout, c) + ") has " + std::to_string(values.size()) +
                 " successful replication(s) of '" + response + "', fewer than the " +
                 std::to_string(options.replications) + " asked for";
        return false;
      }
      values.resize(options.replications);
    }
    std::vector<double> ys;
    for (const auto& v : values) ys.push_back(v.second);
    counts.push_back(ys.size());
    obs->y.push_back(ys);
  }
  // Jain's estimators assume every point has the same number of replications.
  size_t r0 = counts[0];
  for (size_t c = 1; c < counts.size(); ++c) {
    if (counts[c] != r0) {
      size_t a = counts[c] < r0 ? c : 0, b = counts[c] < r0 ? 0 : c;
      *error = "unequal replications of '" + response + "': design point " +
               std::to_string(layout.runs[layout.cell_runs[a][0]].point) + " (" +
               DescribeCell(layout, a) + ") has " + std::to_string(counts[a]) + ", point " +
               std::to_string(layout.runs[layout.cell_runs[b][0]].point) + " (" +
               DescribeCell(layout, b) + ") has " + std::to_string(counts[b]) +
               "; rerun the missing replications or use --replications N to analyse the first N";
      return false;
    }
  }
  obs->replications = static_cast<int>(r0);
  return true;
}

}  // namespace invmw::effects
