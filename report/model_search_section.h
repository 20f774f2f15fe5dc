// The report's "Model search" section (issue 21 item 4): searched models of real applications
// and their errors at held-out design points, from <dir>/model-search.json as written by
// experiments/model_search/heldout.py. Optional: a pipeline without that file gets no section.
#pragma once

#include <string>

namespace invmw::report {

// HTML of the section, "" when <dir>/model-search.json does not exist. Throws ReportError naming
// the file and field when it exists but is not such a document.
std::string ModelSearchSection(const std::string& dir);

}  // namespace invmw::report
