// Test helpers for the server: an HTTP client on loopback that reads SSE
// streams event by event (and can walk away mid-stream), and a scripted
// GenerationService whose "step thread" is the test itself.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/api_error.h"
#include "server/generation_service.h"

namespace folio::server::testing {

struct HttpAnswer {
  int status = 0;  // 0: no answer (connection failed or dropped by us)
  std::string body;
  std::string content_type;
  std::vector<Json> events;  // SSE data lines parsed as JSON ([DONE] excluded)
  bool done = false;         // saw `data: [DONE]`
  bool sse_well_formed = true;
};

// POSTs `body` (JSON) to `path`; with `drop_after` >= 0 the client closes
// the connection after that many SSE events.
inline HttpAnswer post(int port, const std::string& path, const std::string& body,
                       const std::string& api_key = "", int drop_after = -1) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(300, 0);  // sanitizer builds run a loaded server slowly
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  if (!api_key.empty()) req.set_header("Authorization", "Bearer " + api_key);
  HttpAnswer a;
  std::string pending;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    a.body.append(data, n);
    pending.append(data, n);
    size_t end;
    while ((end = pending.find("\n\n")) != std::string::npos) {
      const std::string event = pending.substr(0, end);
      pending.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) {
        a.sse_well_formed = false;
        continue;
      }
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        a.done = true;
        continue;
      }
      Json j = Json::parse(payload, nullptr, false);
      if (j.is_discarded()) a.sse_well_formed = false;
      a.events.push_back(std::move(j));
      if (drop_after >= 0 && static_cast<int>(a.events.size()) >= drop_after) return false;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  if (cli.send(req, res, err)) a.status = res.status;
  // Headers were read before the body even when we walked away from it.
  a.content_type = res.get_header_value("Content-Type");
  if (a.content_type.rfind("text/event-stream", 0) != 0) {
    a.events.clear();
    a.sse_well_formed = pending.empty();
  } else if (!pending.empty()) {
    a.sse_well_formed = false;
  }
  return a;
}

inline HttpAnswer get(int port, const std::string& path, const std::string& api_key = "") {
  httplib::Client cli("127.0.0.1", port);
  httplib::Headers headers;
  if (!api_key.empty()) headers.emplace("Authorization", "Bearer " + api_key);
  HttpAnswer a;
  if (auto res = cli.Get(path.c_str(), headers)) {
    a.status = res->status;
    a.body = res->body;
    a.content_type = res->get_header_value("Content-Type");
  }
  return a;
}

inline Json json_of(const HttpAnswer& a) {
  return Json::parse(a.body, nullptr, false);
}

// Concatenated text of every chunk of choice `index` (chat deltas or
// completion text).
inline std::string streamed_text(const HttpAnswer& a, int index = 0) {
  std::string s;
  for (const Json& e : a.events) {
    if (!e.contains("choices")) continue;
    for (const Json& c : e["choices"]) {
      if (c["index"] != index) continue;
      if (c.contains("text")) s += c["text"].get<std::string>();
      if (c.contains("delta") && c["delta"].contains("content") &&
          c["delta"]["content"].is_string())
        s += c["delta"]["content"].get<std::string>();
    }
  }
  return s;
}

// The finish_reason a stream gave choice `index` ("" if none).
inline std::string streamed_finish(const HttpAnswer& a, int index = 0) {
  for (const Json& e : a.events) {
    if (!e.contains("choices")) continue;
    for (const Json& c : e["choices"]) {
      if (c["index"] == index && c["finish_reason"].is_string()) return c["finish_reason"];
    }
  }
  return "";
}

// The tool-call fragments of a stream's first choice, in order (each
// delta.tool_calls entry: index, then id / function.name / arguments parts).
// The streamed tool-call deltas, one entry per delta as sent.
inline std::vector<Json> streamed_tool_call_deltas(const HttpAnswer& a) {
  std::vector<Json> deltas;
  for (const Json& e : a.events) {
    const Json& d = e["choices"][0]["delta"];
    if (d.contains("tool_calls")) {
      for (const Json& c : d["tool_calls"]) deltas.push_back(c);
    }
  }
  return deltas;
}

// The streamed tool calls put together as OpenAI's client does: by
// `index`, the first delta's id, type and name, the arguments concatenated.
inline std::vector<Json> streamed_tool_calls(const HttpAnswer& a) {
  std::vector<Json> calls;
  for (const Json& c : streamed_tool_call_deltas(a)) {
    const size_t i = c["index"].get<size_t>();
    if (i >= calls.size()) calls.resize(i + 1);
    Json& call = calls[i];
    if (call.is_null()) {
      call = c;
      continue;
    }
    std::string args = call["function"]["arguments"].get<std::string>();
    args += c["function"]["arguments"].get<std::string>();
    call["function"]["arguments"] = args;
  }
  return calls;
}

// A GenerationService driven by the test: submissions are recorded; the
// test delivers their events (as the step thread would) or fails submits.
class ScriptedService final : public GenerationService {
 public:
  struct Submitted {
    uint64_t id;
    GenerationRequest request;
    RequestCallbacks callbacks;
  };

  Result<uint64_t> submit(GenerationRequest request, RequestCallbacks callbacks) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!submit_error_.ok()) return submit_error_;
    const uint64_t id = next_id_++;
    submitted_.push_back({id, std::move(request), std::move(callbacks)});
    cv_.notify_all();
    return id;
  }
  void cancel(uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.push_back(id);
    cv_.notify_all();
  }
  ServingMetrics::Snapshot metrics() const override { return ServingMetrics().snapshot(); }

  void fail_submits_with(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    submit_error_ = std::move(s);
  }
  // Waits for the k-th submission (0-based).
  bool wait_submitted(size_t k, Submitted* out,
                      std::chrono::milliseconds t = std::chrono::seconds(5)) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, t, [&] { return submitted_.size() > k; })) return false;
    *out = submitted_[k];
    return true;
  }
  bool wait_cancelled(uint64_t id, std::chrono::milliseconds t = std::chrono::seconds(5)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, t, [&] {
      for (uint64_t c : cancelled_) {
        if (c == id) return true;
      }
      return false;
    });
  }
  size_t n_submitted() {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Status submit_error_;
  uint64_t next_id_ = 1;
  std::vector<Submitted> submitted_;
  std::vector<uint64_t> cancelled_;
};

// A token event with `text`.
inline TokenEvent token_event(int choice, int32_t id, std::string text) {
  TokenEvent t;
  t.choice = choice;
  t.token.token = id;
  t.text = std::move(text);
  return t;
}

}  // namespace folio::server::testing
