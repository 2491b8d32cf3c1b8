// A raw TCP client for the transport tests: what a hostile or old client
// does (trickle a head byte by byte, pipeline, speak HTTP/1.0, hold a
// connection idle) and a reader that splits the bytes back into responses.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace folio::server::testing {

class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  RawConnection(RawConnection&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

  bool ok() const { return fd_ >= 0; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Appends what arrives within `timeout` to *out; returns false once the
  // peer has closed (or reset) the connection.
  bool read_for(std::chrono::milliseconds timeout, std::string* out) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return true;
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(left.count()));
      if (r <= 0) return true;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      out->append(buf, static_cast<size_t>(n));
    }
  }

  // Reads until the peer closes or `timeout`; true when it closed.
  bool read_until_closed(std::chrono::milliseconds timeout, std::string* out) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (!read_for(std::chrono::milliseconds(20), out)) return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
};

struct RawResponse {
  std::string status_line;  // "HTTP/1.1 200 OK"
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;                                          // de-chunked
  std::string header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return v;
    }
    return "";
  }
};

// Splits `bytes` into complete responses (Content-Length or chunked
// bodies; a response with neither runs to the end of `bytes`).
inline std::vector<RawResponse> parse_responses(std::string_view bytes) {
  std::vector<RawResponse> out;
  while (!bytes.empty()) {
    const size_t head_end = bytes.find("\r\n\r\n");
    if (head_end == std::string_view::npos) break;
    RawResponse r;
    std::string_view head = bytes.substr(0, head_end);
    bytes.remove_prefix(head_end + 4);
    size_t eol = head.find("\r\n");
    r.status_line = std::string(head.substr(0, eol));
    if (r.status_line.size() >= 12) r.status = std::atoi(r.status_line.c_str() + 9);
    while (eol != std::string_view::npos) {
      head.remove_prefix(eol + 2);
      eol = head.find("\r\n");
      std::string_view line = head.substr(0, eol);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string name(line.substr(0, colon));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      r.headers.emplace_back(std::move(name), std::string(value));
    }
    if (r.header("transfer-encoding") == "chunked") {
      bool complete = false;
      while (!bytes.empty()) {
        const size_t le = bytes.find("\r\n");
        if (le == std::string_view::npos) break;
        const size_t size = std::strtoul(std::string(bytes.substr(0, le)).c_str(), nullptr, 16);
        if (bytes.size() < le + 2 + size + 2) break;
        r.body.append(bytes.substr(le + 2, size));
        bytes.remove_prefix(le + 2 + size + 2);
        if (size == 0) {
          complete = true;
          break;
        }
      }
      if (!complete) break;
    } else if (const std::string cl = r.header("content-length"); !cl.empty()) {
      const size_t n = std::strtoul(cl.c_str(), nullptr, 10);
      if (bytes.size() < n) break;
      r.body = std::string(bytes.substr(0, n));
      bytes.remove_prefix(n);
    } else {
      r.body = std::string(bytes);
      bytes = {};
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace folio::server::testing
