#include "server/response_store.h"

namespace folio::server {

bool ResponseStore::put(const std::string& id, const Json& messages) {
  std::string text = dump_json(messages);
  if (max_entries_ == 0 || text.size() > max_bytes_) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(id); it != index_.end()) {
    bytes_ -= it->second->text.size();
    lru_.erase(it->second);
    index_.erase(it);
  }
  bytes_ += text.size();
  lru_.push_front(Entry{id, std::move(text)});
  index_[id] = lru_.begin();
  evict_locked();
  return true;
}

std::optional<Json> ResponseStore::get(const std::string& id) {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second);
    text = it->second->text;
  }
  // Written by dump_json from a Json value: it parses back.
  return Json::parse(text);
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

void ResponseStore::evict_locked() {
  while (!lru_.empty() && (lru_.size() > max_entries_ || bytes_ > max_bytes_)) {
    bytes_ -= lru_.back().text.size();
    index_.erase(lru_.back().id);
    lru_.pop_back();
  }
}

}  // namespace folio::server
