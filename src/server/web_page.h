// The chat page served at GET / (src/server/web/chat.html, embedded in the
// binary at build time by cmake/embed_text.cmake).
#pragma once

#include <string_view>

namespace folio::server {

std::string_view chat_page_html();

}  // namespace folio::server
