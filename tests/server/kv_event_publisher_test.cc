// KvEventPublisher on a loopback endpoint, read by a plain libzmq SUB socket
// and decoded with msgpack-cxx: three frames per batch (empty topic, 8-byte
// big-endian sequence numbers without gaps), events from several publishing
// threads each in their own order, long steps split into batches of at most
// kMaxEventsPerBatch events, and a clear error for an endpoint that cannot be
// bound. (tests/server/kv_events_test.py checks the same stream against a
// real engine with PyPI's pyzmq and msgpack.)
#include "server/kv_event_publisher.h"

#include <gtest/gtest.h>
#include <msgpack.hpp>
#include <zmq.h>

#include <array>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace folio::server {
namespace kv_event_publisher_test {

struct Received {
  uint64_t seq = 0;
  msgpack::object_handle batch;
};

class Subscriber {
 public:
  explicit Subscriber(const std::string& endpoint) {
    ctx_ = zmq_ctx_new();
    sock_ = zmq_socket(ctx_, ZMQ_SUB);
    zmq_setsockopt(sock_, ZMQ_SUBSCRIBE, "", 0);
    EXPECT_EQ(zmq_connect(sock_, endpoint.c_str()), 0);
  }
  ~Subscriber() {
    const int linger = 0;
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
  }
  // One batch, or false after timeout_ms without one.
  bool receive(Received* out, int timeout_ms) {
    zmq_pollitem_t item{sock_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, timeout_ms) <= 0) return false;
    std::vector<std::string> frames;
    int more = 1;
    while (more) {
      zmq_msg_t msg;
      zmq_msg_init(&msg);
      EXPECT_GE(zmq_msg_recv(&msg, sock_, 0), 0);
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
      more = zmq_msg_more(&msg);
      zmq_msg_close(&msg);
    }
    EXPECT_EQ(frames.size(), 3u);
    if (frames.size() != 3) return false;
    EXPECT_EQ(frames[0], "");
    EXPECT_EQ(frames[1].size(), 8u);
    out->seq = 0;
    for (unsigned char c : frames[1]) out->seq = out->seq << 8 | c;
    out->batch = msgpack::unpack(frames[2].data(), frames[2].size());
    return true;
  }

 private:
  void* ctx_;
  void* sock_;
};

std::vector<cache::KvEvent> removal(uint64_t tag, int n) {
  std::vector<cache::KvEvent> ev(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    ev[static_cast<size_t>(i)].kind = cache::KvEvent::Kind::kRemoved;
    ev[static_cast<size_t>(i)].hashes.push_back(cache::BlockHash{tag + static_cast<uint64_t>(i), 0});
  }
  return ev;
}

TEST(ServerKvEventPublisher, FramesSequenceAndSplitting) {
  auto pub = KvEventPublisher::create("tcp://127.0.0.1:*", 16);
  ASSERT_TRUE(pub.ok()) << pub.status().message();
  Subscriber sub((*pub)->bound_endpoint());
  // PUB sends nothing before the subscription arrives: publish until a batch
  // comes through, then everything after it must arrive in order.
  Received r;
  uint64_t first = 0;
  for (int i = 0;; ++i) {
    ASSERT_LT(i, 200) << "the subscriber never received a batch";
    (*pub)->publish(removal(1000, 1));
    if (sub.receive(&r, 25)) {
      first = r.seq;
      break;
    }
  }
  while (sub.receive(&r, 100)) first = r.seq;  // the probes still in flight

  // Two threads, 50 steps each; one step of 2.5 batches' worth of events.
  std::thread a([&] {
    for (int i = 0; i < 50; ++i) (*pub)->publish(removal(1'000'000 + 10 * i, 3));
  });
  std::thread b([&] {
    for (int i = 0; i < 50; ++i) (*pub)->publish(removal(2'000'000 + 10 * i, 2));
  });
  a.join();
  b.join();
  const int big = static_cast<int>(KvEventPublisher::kMaxEventsPerBatch * 5 / 2);
  (*pub)->publish(removal(5'000'000, big));

  uint64_t expect = first + 1;
  std::map<uint64_t, std::vector<uint64_t>> by_thread;  // first hash's range -> hashes seen
  std::vector<size_t> big_batches;
  while (sub.receive(&r, 2000)) {
    EXPECT_EQ(r.seq, expect++);
    const msgpack::object& batch = r.batch.get();
    ASSERT_EQ(batch.type, msgpack::type::ARRAY);
    ASSERT_EQ(batch.via.array.size, 3u);
    EXPECT_EQ(batch.via.array.ptr[0].type, msgpack::type::FLOAT64);
    EXPECT_EQ(batch.via.array.ptr[2].as<int>(), 0);
    const msgpack::object& events = batch.via.array.ptr[1];
    ASSERT_EQ(events.type, msgpack::type::ARRAY);
    ASSERT_GT(events.via.array.size, 0u);
    ASSERT_LE(events.via.array.size, KvEventPublisher::kMaxEventsPerBatch);
    for (uint32_t i = 0; i < events.via.array.size; ++i) {
      const auto m = events.via.array.ptr[i].as<std::map<std::string, msgpack::object>>();
      ASSERT_EQ(m.at("type").as<std::string>(), "BlockRemoved");
      EXPECT_EQ(m.at("medium").as<std::string>(), "GPU");
      const auto hashes = m.at("block_hashes").as<std::vector<uint64_t>>();
      ASSERT_EQ(hashes.size(), 1u);
      by_thread[hashes[0] / 1'000'000].push_back(hashes[0]);
    }
    if (by_thread.count(5)) big_batches.push_back(events.via.array.size);
  }
  EXPECT_EQ((*pub)->batches_sent(), expect);
  // Each thread's events arrive complete and in the order it published them.
  for (uint64_t t : {1u, 2u}) {
    const auto& seen = by_thread[t];
    ASSERT_EQ(seen.size(), t == 1 ? 150u : 100u);
    for (size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i - 1], seen[i]);
  }
  EXPECT_EQ(by_thread[5].size(), static_cast<size_t>(big));
  EXPECT_GE(big_batches.size(), 3u);  // split into batches of at most kMaxEventsPerBatch
}

TEST(ServerKvEventPublisher, UnbindableEndpointIsAClearError) {
  auto a = KvEventPublisher::create("tcp://127.0.0.1:*", 16);
  ASSERT_TRUE(a.ok());
  auto clash = KvEventPublisher::create((*a)->bound_endpoint(), 16);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("--kv-events: cannot bind"), std::string::npos)
      << clash.status().message();
  auto bad = KvEventPublisher::create("not-an-endpoint", 16);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not-an-endpoint"), std::string::npos);
}

}  // namespace
}  // namespace folio::server
