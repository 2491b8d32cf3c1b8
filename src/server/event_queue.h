// EventQueue: hands one HTTP request's generation events from the
// scheduler's step thread to the connection that writes them. push() takes
// a mutex for a vector append and a call of the waker (which only posts to
// the connection's executor), so scheduler callbacks never block on a slow
// client; the connection takes everything queued at once.
#pragma once

#include <functional>
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
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
    // Under the lock: once set_waker({}) has returned, no call is running.
    if (wake_) wake_();
  }

  // Called after each push from then on (and once now if events wait).
  // An empty function detaches.
  void set_waker(std::function<void()> wake) {
    std::lock_guard<std::mutex> lock(mu_);
    wake_ = std::move(wake);
    if (wake_ && !events_.empty()) wake_();
  }

  // Moves every queued event into *out (cleared first).
  void take(std::vector<RequestEvent>* out) {
    out->clear();
    std::lock_guard<std::mutex> lock(mu_);
    out->swap(events_);
  }

 private:
  std::mutex mu_;
  std::vector<RequestEvent> events_;
  std::function<void()> wake_;
};

}  // namespace folio::server
