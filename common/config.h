// Configuration of the runtime and the tools, read from INVMW_<PART>_<KEY> environment variables.
//
// Why one registry: the runtime runs inside somebody else's application, so a bad value must
// never crash it. Every variable is declared once in config_vars.def with its type and default;
// parsing falls back to the default and records a warning that rank 0 prints once. The same
// table drives `invmw config list` and the configuration recorded in profile.json, so the
// documentation cannot drift from the code.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace invmw::config {

enum class Type { Bool, Int, Size, Duration, String, List };
// Who sets a variable (config_vars.def, USE).
enum class Use { User, Internal, TestOnly };

struct VarInfo {
  const char* name;  // full environment variable name, e.g. "INVMW_TRACE_ENABLE"
  Type type;
  const char* default_value;
  const char* description;
  const char* readers;  // the parts that read it, e.g. "pmpi_wrap, pvm_wrap"
  Use use;
};

// All declared variables, in declaration order.
const std::vector<VarInfo>& Variables();
const char* TypeName(Type t);
const char* UseName(Use u);  // "user", "internal", "test only"

struct Config {
#define INVMW_VAR_FIELD_Bool bool
#define INVMW_VAR_FIELD_Int int64_t
#define INVMW_VAR_FIELD_Size uint64_t
#define INVMW_VAR_FIELD_Duration double
#define INVMW_VAR_FIELD_String std::string
#define INVMW_VAR_FIELD_List std::vector<std::string>
#define INVMW_VAR(PART, KEY, TYPE, DEF, READERS, USE, DESC) INVMW_VAR_FIELD_##TYPE PART##_##KEY{};
#include "config_vars.def"
#undef INVMW_VAR

  // Human-readable problems found while parsing ("INVMW_X=abc: expected ...; using default").
  std::vector<std::string> warnings;
  // (name, value as given or default) for every variable, for the run metadata.
  std::vector<std::pair<std::string, std::string>> effective;
};

// Reads the environment. Never throws; bad values produce a warning and the default.
Config Load();
// Same, with a lookup function instead of getenv (for tests).
Config Load(const char* (*lookup)(const char* name));

// Parsers shared with the command-line tools. Each returns false and leaves *out untouched on
// bad input.
bool ParseBool(const std::string& s, bool* out);
bool ParseInt(const std::string& s, int64_t* out);
bool ParseSize(const std::string& s, uint64_t* out);
bool ParseDuration(const std::string& s, double* seconds);
// A UDP/TCP port: digits only, 0..65535 (getaddrinfo would wrap 99999 to 34463).
bool ParsePort(const std::string& s, int* port);
std::vector<std::string> ParseList(const std::string& s);

}  // namespace invmw::config
