// Rendering an effects analysis: a text report for people and JSON for programs.
//
// The text leads with what the numbers rest on (factors, levels, points, replications, the
// method and, for a fraction, what is confounded), then per response the allocation of
// variation and the effects with their confidence intervals. When there is no error term it
// says so instead of printing intervals that cannot exist. JSON carries everything, including
// every interaction effect the text leaves out unless asked.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "experiments/effects/effects.h"

namespace invmw::effects {

struct TextOptions {
  bool all_effects = false;  // also list each interaction's effects of multi-level designs
};

std::string FormatText(const EffectsReport& report, const TextOptions& options);

// Keys documented in docs/effects.md. NaN (no error term) is written as null.
nlohmann::ordered_json ToJson(const EffectsReport& report);

}  // namespace invmw::effects
