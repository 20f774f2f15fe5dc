#include "report/json_fields.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "report/html_report.h"

namespace invmw::report {

using nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ReportError("missing input " + path +
                      " (run scripts/pipeline.sh into this directory first)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json ReadJson(const std::string& path) {
  std::string text = ReadFile(path);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw ReportError(path + ": not valid JSON: " + e.what());
  }
}

const json& Field(const json& obj, const std::string& key, const std::string& file,
                  const std::string& where) {
  if (!obj.is_object() || !obj.contains(key))
    throw ReportError(file + ": missing field '" + where + key + "'");
  return obj.at(key);
}

double Number(const json& obj, const std::string& key, const std::string& file,
              const std::string& where) {
  const json& v = Field(obj, key, file, where);
  if (!v.is_number()) throw ReportError(file + ": field '" + where + key + "' is not a number");
  return v.get<double>();
}

std::string Text(const json& obj, const std::string& key, const std::string& file,
                 const std::string& where) {
  const json& v = Field(obj, key, file, where);
  if (!v.is_string()) throw ReportError(file + ": field '" + where + key + "' is not a string");
  return v.get<std::string>();
}

std::vector<std::string> JsonFiles(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n[0] != '.' && n.compare(n.size() - 5, 5, ".json") == 0)
        files.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> ValidationFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (auto& f : JsonFiles(dir + "/validation"))
    if (f != dir + "/validation/summary.json") files.push_back(std::move(f));
  return files;
}

}  // namespace invmw::report
