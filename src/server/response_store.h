// ResponseStore: the conversations behind the Responses API's
// previous_response_id, kept in memory. Each stored response maps to the
// chat messages that led to it and its own output (as an assistant message
// and tool calls; instructions are not kept, as OpenAI's API does not carry
// them over). Bounded by a number of entries and by their total size (the
// messages' JSON text); the least recently used go first, and an entry over
// the size bound on its own is not kept. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/api_error.h"

namespace folio::server {

class ResponseStore {
 public:
  ResponseStore(size_t max_entries, size_t max_bytes)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // Keeps `messages` (a list of chat messages) under `id`; false when it
  // cannot be kept (bigger than the size bound, or a store of no entries).
  bool put(const std::string& id, const Json& messages);
  // The messages of `id` (and it becomes the most recently used), or none.
  std::optional<Json> get(const std::string& id);

  size_t size() const;
  size_t bytes() const;

 private:
  struct Entry {
    std::string id;
    std::string text;  // the messages' JSON
  };
  void evict_locked();

  const size_t max_entries_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
};

}  // namespace folio::server
