// The static HTML report of a pipeline run (`invmw report DIR`, scripts/pipeline.sh): one
// self-contained page, SVG plots embedded as data: images and no external resources, so it
// opens offline and can be mailed or archived as a single file.
#pragma once

#include <stdexcept>
#include <string>

namespace invmw::report {

// Thrown when an input of the report is missing or malformed; what() names the file and,
// where it applies, the field and what was expected.
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds the page from a pipeline directory: profile/profile.json, fit.json,
// predictions.json and plots/{measured-vs-predicted,breakdown,predict}.svg are required.
std::string BuildHtmlReport(const std::string& dir);

}  // namespace invmw::report
