#include "config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace invmw::config {

const std::vector<VarInfo>& Variables() {
  static const std::vector<VarInfo> vars = {
#define INVMW_VAR(PART, KEY, TYPE, DEF, READERS, USE, DESC) \
  {"INVMW_" #PART "_" #KEY, Type::TYPE, DEF, DESC, READERS, Use::USE},
#include "config_vars.def"
#undef INVMW_VAR
  };
  return vars;
}

const char* TypeName(Type t) {
  switch (t) {
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "int";
    case Type::Size:
      return "size";
    case Type::Duration:
      return "duration";
    case Type::String:
      return "string";
    case Type::List:
      return "list";
  }
  return "?";
}

const char* UseName(Use u) {
  switch (u) {
    case Use::User:
      return "user";
    case Use::Internal:
      return "internal";
    case Use::TestOnly:
      return "test only";
  }
  return "?";
}

static std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool ParseBool(const std::string& in, bool* out) {
  std::string s = Trim(in);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return *out = true, true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return *out = false, true;
  return false;
}

bool ParseInt(const std::string& in, int64_t* out) {
  std::string s = Trim(in);
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool ParsePort(const std::string& s, int* port) {
  int64_t v = -1;
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || !ParseInt(s, &v) ||
      v > 65535)
    return false;
  *port = int(v);
  return true;
}

bool ParseSize(const std::string& in, uint64_t* out) {
  std::string s = Trim(in);
  if (s.empty() || s[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || !(v >= 0)) return false;
  std::string unit = Trim(end);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 1;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    mult = 1024.0 * 1024 * 1024;
  else
    return false;
  *out = static_cast<uint64_t>(v * mult);
  return true;
}

bool ParseDuration(const std::string& in, double* seconds) {
  std::string s = Trim(in);
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || !std::isfinite(v) || v < 0) return false;
  std::string unit = Trim(end);
  double mult;
  if (unit.empty() || unit == "s")
    mult = 1;
  else if (unit == "ms")
    mult = 1e-3;
  else if (unit == "us")
    mult = 1e-6;
  else if (unit == "ns")
    mult = 1e-9;
  else
    return false;
  *seconds = v * mult;
  return true;
}

std::vector<std::string> ParseList(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string item = Trim(s.substr(pos, comma - pos));
    if (!item.empty()) out.push_back(item);
    pos = comma + 1;
  }
  return out;
}

namespace {

const char* Expected(Type t) {
  switch (t) {
    case Type::Bool:
      return "expected 0/1, true/false, yes/no or on/off";
    case Type::Int:
      return "expected an integer";
    case Type::Size:
      return "expected a byte size such as 512K, 64M or 1G";
    case Type::Duration:
      return "expected a non-negative duration such as 10ms, 500us or 1s";
    default:
      return "";
  }
}

template <typename T>
void Set(Config& cfg, const char* name, Type type, const char* def, const char* raw, T* field,
         bool (*parse)(const std::string&, T*)) {
  std::string value = raw ? raw : def;
  if (!parse(value, field)) {
    cfg.warnings.push_back(std::string(name) + "=" + value + ": " + Expected(type) +
                           "; using the default " + def);
    value = def;
    parse(value, field);
  }
  cfg.effective.emplace_back(name, value);
}

void Set(Config& cfg, const char* name, Type, const char* def, const char* raw,
         std::string* field) {
  *field = raw ? raw : def;
  cfg.effective.emplace_back(name, *field);
}

void Set(Config& cfg, const char* name, Type, const char* def, const char* raw,
         std::vector<std::string>* field) {
  std::string value = raw ? raw : def;
  *field = ParseList(value);
  cfg.effective.emplace_back(name, value);
}

#define INVMW_PARSER_Bool , ParseBool
#define INVMW_PARSER_Int , ParseInt
#define INVMW_PARSER_Size , ParseSize
#define INVMW_PARSER_Duration , ParseDuration
#define INVMW_PARSER_String
#define INVMW_PARSER_List

}  // namespace

Config Load(const char* (*lookup)(const char* name)) {
  Config cfg;
#define INVMW_VAR(PART, KEY, TYPE, DEF, READERS, USE, DESC)                           \
  Set(cfg, "INVMW_" #PART "_" #KEY, Type::TYPE, DEF, lookup("INVMW_" #PART "_" #KEY), \
      &cfg.PART##_##KEY INVMW_PARSER_##TYPE);
#include "config_vars.def"
#undef INVMW_VAR
  return cfg;
}

Config Load() {
  return Load([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace invmw::config
