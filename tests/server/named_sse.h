// Named server-sent events as the Anthropic Messages and the Responses APIs
// write them (`event: T`, then `data: J`, then a blank line), split for the
// server tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/api_error.h"

namespace folio::server::testing {

struct SseEvent {
  std::string event;
  Json data;
};

// The events of `text`; an unterminated or malformed event, data that is
// not JSON, or data whose "type" is not the event's name fails the test.
inline std::vector<SseEvent> parse_named_sse(const std::string& text) {
  std::vector<SseEvent> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated event: " << text.substr(pos);
      break;
    }
    const std::string block = text.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = block.find('\n');
    if (block.rfind("event: ", 0) != 0 || nl == std::string::npos ||
        block.compare(nl + 1, 6, "data: ") != 0) {
      ADD_FAILURE() << "malformed event: " << block;
      continue;
    }
    SseEvent e;
    e.event = block.substr(7, nl - 7);
    e.data = Json::parse(block.substr(nl + 7), nullptr, false);
    EXPECT_FALSE(e.data.is_discarded()) << block;
    EXPECT_EQ(e.data["type"], e.event) << block;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace folio::server::testing
