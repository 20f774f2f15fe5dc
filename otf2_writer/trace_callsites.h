// The call sites of a run's trace: which (thread, slot) of a rank's kCall records (event_format.h
// kFlagCallSite) is which call site, read from the rank's call-site file
// (DIR/callsites/rank-NNNNNN.txt, format in docs/callsites.md), and the name every converter
// (the parallel writer at MPI_Finalize, the serial fallback, `invmw trace convert/recover`)
// gives it: its object and offset ("prog+0x11d5"), the same on every rank of a
// position-independent binary, so ranks share one calling context per site. Resolution to
// file:line needs DWARF, which the preload does not link: the finish step renames the contexts
// afterwards (callsite_names.h).
//
// A separate, lenient reader, not callsites/'s parser: that part links libdw. Lines this reader
// does not need are skipped; a malformed line needed here makes the file count as absent (the
// trace then has no contexts for the rank) with a problem naming the line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace invmw::otf2 {

// The canonical name of a call site's region: this prefix and its label (never rewritten, so the
// finish step finds the context again after renaming it).
constexpr char kContextKeyPrefix[] = "invmw-callsite ";

struct RankTraceSites {
  // (thread index, slot) -> index into labels
  std::map<std::pair<int32_t, uint32_t>, uint32_t> site_of;
  std::vector<std::string> labels;  // distinct, in file order
  std::vector<uint64_t> pcs;        // per label: the return address (innermost frame)
};

// False when the rank has no call-site file or it names no slot (format 1); problems get a
// line for a file that cannot be used.
bool LoadTraceSites(const std::string& run_dir, int32_t rank, RankTraceSites* out,
                    std::vector<std::string>* problems);
// The same on the text of a file (path only names it in problems).
bool ParseTraceSites(const std::string& text, const std::string& path, RankTraceSites* out,
                     std::vector<std::string>* problems);

}  // namespace invmw::otf2
