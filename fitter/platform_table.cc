#include "fitter/platform_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <toml++/toml.h>
#include <unistd.h>

#include <utility>

#ifndef INVMW_PLATFORM_TABLES_DIR
#define INVMW_PLATFORM_TABLES_DIR "platforms/tables"
#endif

namespace invmw::fit {

namespace {

const TableValue* FindIn(const std::vector<TableValue>& v, const std::string& n) {
  for (const auto& x : v)
    if (x.name == n) return &x;
  return nullptr;
}

std::string NodeKind(const toml::node& n) {
  std::ostringstream os;
  os << n.type();
  return os.str();
}

std::string FormatNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

bool IsRate(const TableValue& v) {
  return v.name.rfind("mflops", 0) == 0 || v.unit.find("/s") != std::string::npos;
}

std::string Where(const std::string& source, const toml::source_region& r) {
  return source + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column) + ": ";
}

std::vector<TableValue> ReadValues(const toml::table& doc, const char* section,
                                   const std::string& source) {
  std::vector<TableValue> out;
  const toml::node* n = doc.get(section);
  if (!n) return out;
  const toml::table* t = n->as_table();
  if (!t) throw TableError(Where(source, n->source()) + "[" + section + "] must be a table");
  for (const auto& [k, v] : *t) {
    TableValue tv;
    tv.name = std::string(k.str());
    std::string field = std::string(section) + "." + tv.name;
    if (auto d = v.value<double>()) {
      tv.value = *d;
    } else if (const toml::table* vt = v.as_table()) {
      const toml::node* vn = vt->get("value");
      if (!vn) throw TableError(Where(source, v.source()) + field + " lacks 'value' (a number)");
      auto val = vn->value<double>();
      if (!val)
        throw TableError(Where(source, vn->source()) + field + ".value must be a number, not " +
                         (vn->is_string() ? "a string" : "a " + NodeKind(*vn)));
      tv.value = *val;
      tv.unit = (*vt)["unit"].value_or(std::string());
      tv.source = (*vt)["source"].value_or(std::string());
      if (const toml::node* se = vt->get("std_error")) {
        auto e = se->value<double>();
        if (!e || !std::isfinite(*e) || *e < 0)
          throw TableError(Where(source, se->source()) + field +
                           ".std_error must be a finite number >= 0");
        tv.std_error = *e;
      }
      for (const auto& [vk, vv] : *vt) {
        std::string key(vk.str());
        if (key != "value" && key != "unit" && key != "source" && key != "std_error") {
          throw TableError(Where(source, vk.source()) + "unknown key '" + key + "' in " + field +
                           " (expected value, unit, source, std_error)");
        }
      }
    } else {
      throw TableError(Where(source, v.source()) + field +
                       " must be a number or a table {value, unit, source}");
    }
    // Platform parameters and kernel times are times and rates: a negative or infinite one
    // would give negative or infinite predictions without a word.
    const std::string sect(section);
    if (!std::isfinite(tv.value))
      throw TableError(Where(source, v.source()) + field + " must be a finite number");
    if ((sect == "parameters" || sect == "kernels") && tv.value < 0)
      throw TableError(Where(source, v.source()) + field + " = " + FormatNumber(tv.value) +
                       ": must be >= 0 (a time or a rate)");
    if (sect == "parameters" && tv.value == 0 && tv.unit.find("/s") != std::string::npos)
      throw TableError(Where(source, v.source()) + field + " = 0 " + tv.unit +
                       ": a rate must be > 0");
    // The transfer rule divides by compute rates and kernel times: a zero would silently zero
    // (or blow up) the transferred compute parameters.
    if (sect == "kernels" && !(tv.value > 0))
      throw TableError(Where(source, v.source()) + field + " = " + FormatNumber(tv.value) +
                       ": a kernel time must be > 0");
    if (sect == "measures" && tv.unit == "s" && tv.value < 0)
      throw TableError(Where(source, v.source()) + field + " = " + FormatNumber(tv.value) +
                       " s: a time must be >= 0");
    if (sect == "measures" && IsRate(tv) && !(tv.value > 0))
      throw TableError(Where(source, v.source()) + field + " = " + FormatNumber(tv.value) +
                       (tv.unit.empty() ? "" : " " + tv.unit) + ": a rate must be > 0");
    out.push_back(tv);
  }
  return out;
}

std::string Quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    // TOML forbids other control characters in basic strings; escaped so the table loads again.
    if ((c >= 0 && c < 0x20 && c != '\t') || c == 0x7f) {
      char u[8];
      std::snprintf(u, sizeof u, "\\u%04x", unsigned(c));
      o += u;
      continue;
    }
    o += c;
  }
  return o + "\"";
}

// A key as written: bare when TOML allows it, quoted otherwise.
std::string Key(const std::string& k) {
  bool bare = !k.empty();
  for (char c : k)
    bare = bare && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return bare ? k : Quote(k);
}

}  // namespace

const TableValue* PlatformTable::Parameter(const std::string& n) const {
  return FindIn(parameters, n);
}
const TableValue* PlatformTable::Measure(const std::string& n) const {
  return FindIn(measures, n);
}
const TableValue* PlatformTable::Kernel(const std::string& n) const {
  return FindIn(kernels, n);
}

PlatformTable ParsePlatformTable(const std::string& text, const std::string& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw TableError(Where(source, e.source()) +
                     "TOML syntax error: " + std::string(e.description()));
  }
  PlatformTable t;
  t.path = source;
  // value_exact: value<int64_t>() casts a float such as 22E22 to an integer, which is undefined.
  auto schema = doc["schema"].value_exact<int64_t>();
  if (!schema)
    throw TableError(source +
                     (doc["schema"] ? ": 'schema' is not an integer" : ": missing 'schema'") +
                     " (this invmw reads schema = 1)");
  if (*schema != 1) {
    throw TableError(Where(source, doc["schema"].node()->source()) + "schema " +
                     std::to_string(*schema) + " is not supported (expected 1)");
  }
  for (const auto& [k, v] : doc) {
    std::string key(k.str());
    static const char* kKeys[] = {"schema",     "name",     "title",   "description",
                                  "parameters", "measures", "kernels", "topology"};
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      throw TableError(Where(source, k.source()) + "unknown key '" + key +
                       "' (expected schema, name, title, description, parameters, measures, "
                       "kernels, topology)");
    }
  }
  t.name = doc["name"].value_or(std::string());
  if (t.name.empty()) throw TableError(source + ": missing 'name' (a string)");
  t.title = doc["title"].value_or(t.name);
  t.description = doc["description"].value_or(std::string());
  t.parameters = ReadValues(doc, "parameters", source);
  t.measures = ReadValues(doc, "measures", source);
  t.kernels = ReadValues(doc, "kernels", source);
  if (const toml::node* tn = doc.get("topology")) {
    auto v = tn->value<std::string>();
    if (!v || (*v != "cluster" && *v != "fat-tree"))
      throw TableError(Where(source, tn->source()) +
                       "topology must be \"cluster\" or \"fat-tree\"");
    t.topology = *v;
  }
  // The SimGrid export reads these in fixed units: a backbone in other units, or without a
  // rate, would be a different network without a word.
  for (const auto& [field, unit] :
       {std::pair<const char*, const char*>{"backbone_bw", "MB/s"}, {"backbone_lat", "s"}}) {
    const TableValue* v = t.Measure(field);
    if (!v) continue;
    const toml::node* vn = doc["measures"][field].node();
    if (v->unit != unit)
      throw TableError(Where(source, vn->source()) + "measures." + field + " must have unit \"" +
                       unit + "\", not \"" + v->unit + "\"");
    if (std::string(field) == "backbone_bw" && !(v->value > 0))
      throw TableError(Where(source, vn->source()) + "measures.backbone_bw must be > 0 MB/s");
  }
  return t;
}

PlatformTable LoadPlatformTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TableError(path + ": cannot open platform table");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParsePlatformTable(ss.str(), path);
}

std::string FormatPlatformTable(const PlatformTable& t) {
  std::ostringstream o;
  o << std::setprecision(10);
  o << "schema = 1\nname = " << Quote(t.name) << "\ntitle = " << Quote(t.title) << "\n";
  if (!t.description.empty()) o << "description = " << Quote(t.description) << "\n";
  if (!t.topology.empty()) o << "topology = " << Quote(t.topology) << "\n";
  auto section = [&](const char* name, const std::vector<TableValue>& vals) {
    if (vals.empty()) return;
    o << "\n[" << name << "]\n";
    for (const auto& v : vals) {
      o << Key(v.name) << " = { value = " << v.value;
      if (!v.unit.empty()) o << ", unit = " << Quote(v.unit);
      if (v.std_error >= 0) o << ", std_error = " << v.std_error;
      if (!v.source.empty()) o << ", source = " << Quote(v.source);
      o << " }\n";
    }
  };
  section("parameters", t.parameters);
  section("measures", t.measures);
  section("kernels", t.kernels);
  return o.str();
}

std::string PlatformTablesDir(const std::string& dir) {
  return dir.empty() ? std::string(INVMW_PLATFORM_TABLES_DIR) : dir;
}

std::string ResolvePlatformTable(const std::string& name_or_path, const std::string& dir) {
  if (name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".toml")) {
    if (access(name_or_path.c_str(), R_OK) == 0) return name_or_path;
    throw TableError(name_or_path + ": cannot open platform table");
  }
  std::string d = PlatformTablesDir(dir);
  std::string p = d + "/" + name_or_path + ".toml";
  if (access(p.c_str(), R_OK) == 0) return p;
  std::string list;
  for (const auto& n : ListPlatformTables(dir)) list += (list.empty() ? "" : ", ") + n;
  throw TableError("no platform table '" + name_or_path + "' in " + d +
                   " (available: " + (list.empty() ? "none" : list) + ")");
}

std::vector<std::string> ListPlatformTables(const std::string& dir) {
  std::vector<std::string> out;
  std::string d = PlatformTablesDir(dir);
  if (DIR* dp = opendir(d.c_str())) {
    while (dirent* e = readdir(dp)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".toml")
        out.push_back(n.substr(0, n.size() - 5));
    }
    closedir(dp);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace invmw::fit
