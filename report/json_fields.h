// Reading the JSON files of a pipeline run for the report: every missing or mistyped field is a
// ReportError naming the file and the field, because a silently empty table would look like a
// result. Shared by the report's sections.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace invmw::report {

// The whole file; a missing file says to run the pipeline first.
std::string ReadFile(const std::string& path);
// The file parsed as JSON.
nlohmann::json ReadJson(const std::string& path);
// obj[key]; `where` is the path of obj inside the file (e.g. "summary."), for the message.
const nlohmann::json& Field(const nlohmann::json& obj, const std::string& key,
                            const std::string& file, const std::string& where);
double Number(const nlohmann::json& obj, const std::string& key, const std::string& file,
              const std::string& where);
std::string Text(const nlohmann::json& obj, const std::string& key, const std::string& file,
                 const std::string& where);

// The *.json files of a directory (not hidden ones), in name order; none if it does not exist.
std::vector<std::string> JsonFiles(const std::string& dir);
// DIR/validation's `invmw validate --out` files: its JSON files but the pooled summary.json
// (`invmw validate summary`), which is not one validation.
std::vector<std::string> ValidationFiles(const std::string& dir);

}  // namespace invmw::report
