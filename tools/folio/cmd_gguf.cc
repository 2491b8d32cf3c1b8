// `folio gguf FILE`: print a GGUF file's header, metadata and tensor table
// (gguf-dump style). Errors go to stderr as "folio: <message>", exit code 1.
#include <cstdio>

#include "commands.h"
#include "gguf/gguf_dump.h"
#include "gguf/gguf_file.h"

namespace folio::tools {

void register_gguf_command(CLI::App& app, CommandFn* selected) {
  CLI::App* cmd = app.add_subcommand("gguf", "print a GGUF file's metadata and tensor table");
  static std::string path;
  static bool no_tensors = false;
  static bool no_metadata = false;
  static size_t max_items = gguf::DumpOptions().max_array_items;
  cmd->add_option("file", path, "GGUF file")->required();
  cmd->add_flag("--no-tensors", no_tensors, "do not print the tensor table");
  cmd->add_flag("--no-metadata", no_metadata, "do not print the metadata");
  cmd->add_option("--max-items", max_items, "array items shown per metadata value")
      ->capture_default_str();
  cmd->callback([selected] {
    *selected = [] {
      Result<gguf::GgufFile> file = gguf::GgufFile::open(path);
      if (!file.ok()) {
        std::fprintf(stderr, "folio: %s\n", file.status().message().c_str());
        return 1;
      }
      gguf::DumpOptions options;
      options.metadata = !no_metadata;
      options.tensors = !no_tensors;
      options.max_array_items = max_items;
      const std::string text = gguf::dump_gguf(*file, options);
      if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
          std::fflush(stdout) != 0) {
        std::fprintf(stderr, "folio: cannot write to stdout\n");
        return 1;
      }
      return 0;
    };
  });
}

}  // namespace folio::tools
