// `folio info`: what this machine offers and which kernels folio will use.
#include <cstdio>

#include "commands.h"
#include "core/cpu_features.h"

namespace folio::tools {

void register_info_command(CLI::App& app, CommandFn* selected) {
  CLI::App* cmd = app.add_subcommand("info", "print CPU features and the active kernel ISA");
  cmd->callback([selected] {
    *selected = [] {
      std::printf("cpu features : %s\n", cpu_features().to_string().c_str());
      std::printf("detected isa : %s\n", isa_name(detected_isa()));
      std::printf("active isa   : %s\n", isa_name(active_isa()));
      return 0;
    };
  });
}

}  // namespace folio::tools
