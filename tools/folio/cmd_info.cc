// `folio info`: what this machine offers and which kernels folio will use.
#include <cstdio>

#include "cli_device.h"
#include "commands.h"
#include "core/cpu_features.h"

namespace folio::tools {

void register_info_command(CLI::App& app, CommandFn* selected) {
  CLI::App* cmd = app.add_subcommand("info", "print CPU features, the active kernel ISA and compute devices");
  cmd->callback([selected] {
    *selected = [] {
      std::printf("cpu features : %s\n", cpu_features().to_string().c_str());
      std::printf("detected isa : %s\n", isa_name(detected_isa()));
      std::printf("active isa   : %s\n", isa_name(active_isa()));
      for (const std::string& line : describe_devices()) std::printf("device       : %s\n", line.c_str());
      return 0;
    };
  });
}

}  // namespace folio::tools
