// What the shutdown and the access log see of requests that do not end
// normally (issue 50): a request whose prompt is still being rendered is in
// flight (before, only scheduled requests counted, so a shutdown said "0
// requests in flight" during a slow template); a client that left while its
// prompt rendered gets no place in the batch; a stream whose client left is
// logged with its real token counts, finish=cancelled and client=closed (it
// was "prompt=0 generated=0" with no finish); an invalid JSON body is logged
// with where it failed, never its bytes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "server_fixture.h"

namespace og::server::test {
namespace {

using nlohmann::json;

// The stories fixture's chatml template, rendering after a pause (a slow
// hostile template's stand-in).
class SlowTemplate : public ChatFormat {
 public:
  SlowTemplate(const ChatFormat& inner, int ms) : inner_(inner), ms_(ms) {}
  std::string name() const override { return inner_.name(); }
  ChatSegments render_segments(std::span<const ChatMessage> messages, bool add_generation_prompt) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
    return inner_.render_segments(messages, add_generation_prompt);
  }
  std::string turn_end() const override { return inner_.turn_end(); }
  std::vector<std::string> stop_markers() const override { return inner_.stop_markers(); }

 private:
  const ChatFormat& inner_;
  const int ms_;
};

// Sends `request` on a new loopback connection and closes it at once.
void send_and_leave(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  ::close(fd);
}

std::string post_head(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

class InFlightLog : public ServerFixture {
 protected:
  HttpOptions logging(bool json_format) {
    HttpOptions o;
    o.log_json = json_format;
    o.log = [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(l);
    };
    return o;
  }
  std::vector<std::string> lines(size_t n) {
    for (int i = 0; i < 2000; ++i) {  // up to 10 s
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (lines_.size() >= n) return lines_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST_F(InFlightLog, ARequestBeingRenderedIsInFlight) {
  start(logging(true));
  SlowTemplate slow(*tmpl_, 1500);
  model_.tmpl = &slow;
  std::thread t([&] {
    auto c = client();
    auto r = c.Post("/v1/chat/completions",
                    R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 2})",
                    "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
  });
  // While the template renders, nothing is scheduled, yet the request is in flight.
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    seen = server_->in_flight() == 1;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(seen) << "in flight: " << server_->in_flight();
  EXPECT_TRUE(sched_->submitted().empty());
  EXPECT_FALSE(server_->wait_idle(0.2)) << "a shutdown would not wait for it";
  t.join();
  EXPECT_TRUE(server_->wait_idle(5));
  EXPECT_EQ(server_->in_flight(), 0);
  model_.tmpl = tmpl_.get();
}

TEST_F(InFlightLog, AClientThatLeftWhileItsPromptRenderedIsNotScheduled) {
  start(logging(true));
  SlowTemplate slow(*tmpl_, 600);
  model_.tmpl = &slow;
  send_and_leave(port_, post_head("/v1/chat/completions",
                                  R"({"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 50})"));
  const std::vector<std::string> got = lines(1);
  ASSERT_EQ(got.size(), 1u);
  const json j = json::parse(got[0]);
  EXPECT_EQ(j["status"], 499) << got[0];
  EXPECT_NE(j["error"].get<std::string>().find("closed the connection"), std::string::npos) << got[0];
  EXPECT_TRUE(sched_->submitted().empty()) << "the request went to the scheduler after its client left";
  EXPECT_TRUE(server_->wait_idle(5));
  model_.tmpl = tmpl_.get();
}

TEST_F(InFlightLog, ACancelledStreamIsLoggedWithItsCounts) {
  for (const bool json_format : {true, false}) {
    lines_.clear();
    start(logging(json_format));
    auto c = client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = R"({"prompt": "Once upon a time there was", "max_tokens": 200, "stream": true})";
    req.set_header("Content-Type", "application/json");
    size_t chunks = 0;
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };  // then leaves
    c.send(req);
    const std::vector<std::string> got = lines(1);
    ASSERT_EQ(got.size(), 1u);
    if (json_format) {
      const json j = json::parse(got[0]);
      EXPECT_EQ(j["status"], 200) << got[0];
      EXPECT_GT(j["prompt_tokens"].get<int>(), 0) << got[0];
      EXPECT_GT(j["generated_tokens"].get<int>(), 0) << got[0];
      EXPECT_LT(j["generated_tokens"].get<int>(), 200) << got[0];
      EXPECT_EQ(j["finish_reason"], "cancelled") << got[0];
      EXPECT_EQ(j["client_closed"], true) << got[0];
    } else {
      EXPECT_NE(got[0].find(" 200 "), std::string::npos) << got[0];
      EXPECT_EQ(got[0].find(" prompt=0 "), std::string::npos) << got[0];
      EXPECT_EQ(got[0].find(" generated=0 "), std::string::npos) << got[0];
      EXPECT_NE(got[0].find(" finish=cancelled client=closed "), std::string::npos) << got[0];
    }
    EXPECT_TRUE(server_->wait_idle(5));
    TearDown();
  }
}

TEST_F(InFlightLog, InvalidJsonIsLoggedWithoutTheBody) {
  start(logging(false));
  auto c = client();
  const std::string body =
      R"({"messages": [{"role": "user", "content": "MY-SECRET-PROMPT and more of it"}], "max_tokens": 4,,})";
  auto r = c.Post("/v1/chat/completions", body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  r = c.Post("/v1/chat/completions", R"({"messages": "MY-SECRET-PROMPT unterminated)", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  const std::vector<std::string> got = lines(2);
  ASSERT_EQ(got.size(), 2u);
  for (const std::string& l : got) {
    EXPECT_EQ(l.find("SECRET"), std::string::npos) << l;
    EXPECT_NE(l.find("error: the request body is not valid JSON"), std::string::npos) << l;
  }
}

}  // namespace
}  // namespace og::server::test
