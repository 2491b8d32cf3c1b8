// KvEventPublisher: `folio serve --kv-events ENDPOINT` publishes the prefix
// cache's changes (cache/kv_events.h) where routers built for vLLM listen:
// a ZMQ PUB socket bound at ENDPOINT (tcp://HOST:PORT, routers connect to
// it), each batch sent as vLLM's three frames
//   [topic (empty), sequence number (8 bytes, big-endian, from 0), payload]
// with the payload in server/kv_event_wire.h's format. The scheduler hands
// over every step's events (publish(), never blocks); a thread of the
// publisher encodes and sends them in order. A batch holds at most
// kMaxEventsPerBatch events (longer steps are split). PUB drops messages for
// subscribers that are not connected or too slow (its high-water mark), as
// vLLM's does; a subscriber that attaches late sees a sequence gap and
// starts over, and a restarted engine's stream starts again from sequence 0
// with an all-cleared event.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache/kv_events.h"
#include "core/status.h"

namespace folio::server {

class KvEventPublisher {
 public:
  static constexpr size_t kMaxEventsPerBatch = 1024;

  // Binds the socket; an endpoint ZMQ cannot bind (bad syntax, address in
  // use) is an error naming it.
  static Result<std::unique_ptr<KvEventPublisher>> create(const std::string& endpoint,
                                                          int32_t block_size);
  ~KvEventPublisher();  // sends what was handed over (up to 1 s), then closes
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  // Any thread; events in order across calls.
  void publish(std::vector<cache::KvEvent> events);

  const std::string& endpoint() const { return endpoint_; }
  // The address actually bound (tcp://127.0.0.1:* binds a free port).
  std::string bound_endpoint() const;
  int32_t block_size() const { return block_size_; }
  uint64_t batches_sent() const;

 private:
  KvEventPublisher(void* context, void* socket, std::string endpoint, int32_t block_size);
  void run();

  void* context_;
  void* socket_;
  const std::string endpoint_;
  const int32_t block_size_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::vector<cache::KvEvent>> queue_;
  bool stopping_ = false;
  uint64_t seq_ = 0;  // next sequence number (publisher thread; read under mu_)
  std::thread thread_;
};

}  // namespace folio::server
