// Factories of the built-in sources (one per source module); sources.cc lists them in the
// registry table. Internal to the sampler.
#pragma once

#include <memory>

#include "sampler/source.h"

namespace invmw::sampler {

std::unique_ptr<Source> NewProcSource();
std::unique_ptr<Source> NewNodeCpuSource();
std::unique_ptr<Source> NewNetSource();
std::unique_ptr<Source> NewDiskSource();
std::unique_ptr<Source> NewCgroupSource();
std::unique_ptr<Source> NewCountersSource();
void PrepareCountersSource(const SourceContext& ctx);

}  // namespace invmw::sampler
