// A chat-template render that nobody waits for stops (issue 50, "work for a
// client that left stops"; "SIGTERM ends serve within the grace plus a small
// margin"): a template that would compute for 30 s (its budget and deadline
// raised by flags) is stopped within a fraction of a second once its client
// closes the connection, and at once by SIGTERM. Before, the one HTTP worker
// stayed in the render until its deadline: the next request waited, and a
// SIGTERM ended only through the watchdog's forced exit.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "serve_util.h"

namespace og::e2e {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

const std::string kStories = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

// chatml, but a first message holding 'slow' compares a 50k-item list with
// itself 100k times first (minutes of work).
const char* kSlowTemplate =
    "{% if 'slow' in messages[0].content %}{% set l = range(50000)|list %}"
    "{% for i in range(100000) %}{% if l == l %}{% endif %}{% endfor %}{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

std::vector<std::string> slow_serve_args() {
  const std::string path = scratch_dir() + "/slow-chat.jinja";
  std::ofstream(path, std::ios::binary) << kSlowTemplate;
  // One HTTP worker: while it renders, every other generation or tokenize waits.
  return {"--model", kStories, "--chat-template-file", path, "--kv-max-capacity", "256", "--http-threads", "1",
          "--template-max-work", "1000000000000000", "--template-max-ms", "30000"};
}

const std::string kSlowBody = json({{"messages", json::array({{{"role", "user"}, {"content", "slow"}}})},
                                    {"max_tokens", 2}}).dump();

int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Sends the slow request on a new connection and returns the socket.
int send_slow(int port) {
  const int fd = connect_to(port);
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(kSlowBody.size()) + "\r\n\r\n" + kSlowBody;
  EXPECT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  return fd;
}

TEST(RenderCancel, ARenderStopsWhenItsClientLeaves) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc s(slow_serve_args());
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  const int fd = send_slow(s.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // rendering by now
  close(fd);
  const auto left = Clock::now();
  httplib::Client c("127.0.0.1", s.port());
  c.set_read_timeout(40, 0);
  auto r = c.Post("/tokenize", R"({"prompt": "hello"})", "application/json");
  const double waited = std::chrono::duration<double>(Clock::now() - left).count();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  // The render is polled every 10 ms; 1 s leaves room for a loaded machine.
  EXPECT_LT(waited, 1.0) << "the worker stayed in the render of a client that left";
  EXPECT_EQ(s.stop(SIGTERM, 30), 143);
  EXPECT_NE(s.stderr_text().find(" 499 "), std::string::npos) << s.stderr_text();
}

TEST(RenderCancel, SigtermStopsARenderAtOnce) {
  ASSERT_TRUE(std::filesystem::exists(kStories)) << "missing test data " << kStories;
  ServeProc s(slow_serve_args());
  ASSERT_TRUE(s.ready()) << s.stderr_text();
  const int fd = send_slow(s.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto sent = Clock::now();
  // The default grace is 10 s: a render left running would end only with the
  // watchdog's forced exit at 15 s.
  EXPECT_EQ(s.stop(SIGTERM, 30), 143);
  const double took = std::chrono::duration<double>(Clock::now() - sent).count();
  EXPECT_LT(took, 3.0);
  EXPECT_EQ(s.stderr_text().find("did not finish"), std::string::npos) << s.stderr_text();
  // The client is told the server is stopping.
  std::string reply;
  char buf[4096];
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 503", 0), 0u) << reply << s.stderr_text();
}

}  // namespace
}  // namespace og::e2e
