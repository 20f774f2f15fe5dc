// Helpers shared by the fitter's verbs: loading a model or table with the error turned into the
// uniform CLI failure, and number formatting that keeps columns aligned.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace invmw::fit::cli {

// "%.5g" with a fixed width, "-" for NaN.
std::string Fmt(double v, int width = 11);
// A JSON number, or null for NaN and infinities (which JSON cannot hold).
nlohmann::json Num(double v);
// Parses NAME=VALUE items (--fix, --set); returns false with *error set on a malformed item.
bool ParseAssignments(const std::vector<std::string>& items, const char* option,
                      std::map<std::string, double>* out, std::string* error);
// A share of a total, 0 <= F < 1, the whole text a number (--significant-share).
bool ParseShare(const std::string& text, double* share);

}  // namespace invmw::fit::cli
