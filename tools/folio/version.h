// The text `folio --version` prints: version, source commit, compiler and
// the kernel ISA this machine selects.
#pragma once

#include <string>

namespace folio::tools {

std::string version_text();

}  // namespace folio::tools
