// Printable renderings of untrusted strings (keys, tensor names, values) for
// error messages and dumps: control bytes and quotes escaped, long strings cut.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace folio::gguf {

// Escapes `\`, the `quote` character and bytes < 0x20 or == 0x7f (\n, \t, \r,
// \xNN); other bytes (UTF-8 included) pass through. At most `max_bytes` input
// bytes are rendered (never half a UTF-8 sequence); a cut string ends in "...".
std::string escape_string(std::string_view s, size_t max_bytes = 200, char quote = '"');

// A key or tensor name for an error message: 'escaped' (at most 120 bytes).
std::string quoted(std::string_view s);

}  // namespace folio::gguf
