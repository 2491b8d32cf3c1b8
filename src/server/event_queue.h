// EventQueue: hands one HTTP request's generation events from the
// scheduler's step thread to the connection thread that writes them.
// push() only takes a mutex for a vector append and a notify, so scheduler
// callbacks never block on a slow client; the connection thread takes
// everything queued at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "engine/scheduler.h"

namespace folio::server {

struct RequestEvent {
  int sub = 0;  // which submission of the HTTP request (completions: prompt index)
  bool done = false;
  TokenEvent token;      // !done
  RequestResult result;  // done
};

class EventQueue {
 public:
  void push(RequestEvent e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(e));
    }
    cv_.notify_one();
  }

  // Waits up to `timeout` for events; moves every queued one into *out
  // (cleared first). False when none came.
  bool wait_take(std::vector<RequestEvent>* out, std::chrono::milliseconds timeout) {
    out->clear();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
    out->swap(events_);
    return !out->empty();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RequestEvent> events_;
};

}  // namespace folio::server
