#include "server/kv_event_publisher.h"

#include <zmq.h>

#include <array>
#include <chrono>
#include <span>

#include "core/log.h"
#include "server/kv_event_wire.h"

namespace folio::server {

namespace {

// Messages PUB queues per subscriber before it drops (vLLM's default).
constexpr int kHighWaterMark = 100000;
constexpr int kLingerMs = 1000;

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<std::unique_ptr<KvEventPublisher>> KvEventPublisher::create(const std::string& endpoint,
                                                                   int32_t block_size) {
  void* context = zmq_ctx_new();
  if (context == nullptr) return internal_error("--kv-events: cannot create a ZMQ context");
  void* socket = zmq_socket(context, ZMQ_PUB);
  if (socket == nullptr) {
    zmq_ctx_term(context);
    return internal_error("--kv-events: cannot create a ZMQ PUB socket");
  }
  const int hwm = kHighWaterMark, linger = kLingerMs;
  zmq_setsockopt(socket, ZMQ_SNDHWM, &hwm, sizeof(hwm));
  zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof(linger));
  if (zmq_bind(socket, endpoint.c_str()) != 0) {
    const std::string why = zmq_strerror(zmq_errno());
    zmq_close(socket);
    zmq_ctx_term(context);
    return invalid_argument("--kv-events: cannot bind '{}': {} (expected tcp://HOST:PORT)",
                            endpoint, why);
  }
  return std::unique_ptr<KvEventPublisher>(
      new KvEventPublisher(context, socket, endpoint, block_size));
}

KvEventPublisher::KvEventPublisher(void* context, void* socket, std::string endpoint,
                                   int32_t block_size)
    : context_(context), socket_(socket), endpoint_(std::move(endpoint)),
      block_size_(block_size) {
  thread_ = std::thread([this] { run(); });
}

KvEventPublisher::~KvEventPublisher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  zmq_close(socket_);  // waits up to the linger time for queued messages
  zmq_ctx_term(context_);
}

void KvEventPublisher::publish(std::vector<cache::KvEvent> events) {
  if (events.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(events));
  }
  wake_.notify_one();
}

std::string KvEventPublisher::bound_endpoint() const {
  std::array<char, 256> buf{};
  size_t size = buf.size();
  if (zmq_getsockopt(socket_, ZMQ_LAST_ENDPOINT, buf.data(), &size) != 0) return endpoint_;
  return std::string(buf.data());
}

uint64_t KvEventPublisher::batches_sent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

void KvEventPublisher::run() {
  for (;;) {
    std::vector<cache::KvEvent> events;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, everything sent
      events = std::move(queue_.front());
      queue_.pop_front();
    }
    const std::span<const cache::KvEvent> all(events);
    for (size_t at = 0; at < all.size(); at += kMaxEventsPerBatch) {
      const std::string payload = encode_kv_event_batch(
          unix_seconds(), all.subspan(at, std::min(kMaxEventsPerBatch, all.size() - at)),
          block_size_);
      uint64_t seq;
      {
        std::lock_guard<std::mutex> lock(mu_);
        seq = seq_;
      }
      std::array<unsigned char, 8> seq_bytes;
      for (int i = 0; i < 8; ++i) seq_bytes[static_cast<size_t>(i)] = (seq >> (56 - 8 * i)) & 0xff;
      // PUB never blocks: a full queue drops the message for that subscriber.
      const bool ok = zmq_send(socket_, "", 0, ZMQ_SNDMORE) >= 0 &&
                      zmq_send(socket_, seq_bytes.data(), seq_bytes.size(), ZMQ_SNDMORE) >= 0 &&
                      zmq_send(socket_, payload.data(), payload.size(), 0) >= 0;
      if (!ok) FOLIO_LOG_WARN("kv events: sending batch {} failed: {}", seq, zmq_strerror(zmq_errno()));
      std::lock_guard<std::mutex> lock(mu_);
      ++seq_;
    }
  }
}

}  // namespace folio::server
