// Test doubles and helpers for the server: a scripted scheduler that keeps
// the SchedulerPort contract (its own thread, one on_finish per request,
// cancel within a step) and echoes each prompt's tokens back as the reply,
// and a fixture that runs a real HttpServer on 127.0.0.1 (any free port) over
// it with the stories260K vocabulary; SSE helpers.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "runtime/stop_filter.h"
#include "server/backend.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace og::server::test {

inline const std::string kStoriesGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";

// Replies with the prompt's own tokens (cycled), one per step, until
// max_new_tokens (kLength) or a stop string (kStop). A step runs every
// step_ms on the scheduler's thread; at most max_running choices at once.
// Choice i of a group (submit_group) starts its echo at the prompt's token i,
// as a different seed would make it differ, and reports choice = i.
class EchoScheduler : public SchedulerPort {
 public:
  EchoScheduler(const Tokenizer& tok, int step_ms = 2, int max_running = 4)
      : tok_(tok), step_ms_(step_ms), max_running_(max_running), thread_([this] { loop(); }) {}
  ~EchoScheduler() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  uint64_t submit(RequestOptions req, RequestCallbacks cb) override {
    std::vector<RequestCallbacks> one;
    one.push_back(std::move(cb));
    return submit_group(std::move(req), std::move(one));
  }
  uint64_t submit_group(RequestOptions req, std::vector<RequestCallbacks> choices) override {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = ++next_id_;
    last_choices_ = static_cast<int>(choices.size());
    submitted_.push_back(req);
    // Prompt logprobs go to the first choice, before any token (token i's
    // logprob is -0.25 i; alternative k is the same token at -0.25 i - k).
    if (req.prompt_logprobs && !choices.empty() && choices[0].on_prompt_token)
      for (size_t i = 1; i < req.prompt.size(); ++i) {
        TokenEvent ev;
        ev.id = req.prompt[i];
        ev.logprob = -0.25f * static_cast<float>(i);
        for (int k = 0; k < req.top_logprobs; ++k) ev.top.push_back({ev.id, ev.logprob - static_cast<float>(k)});
        choices[0].on_prompt_token(ev);
      }
    for (size_t i = 0; i < choices.size(); ++i) {
      Req r;
      r.id = id;
      r.choice = static_cast<int>(i);
      r.opts = req;
      r.opts.sampler.seed += i;
      r.cb = std::move(choices[i]);
      r.stops = StopFilter(r.opts.stop_strings);
      r.submitted = std::chrono::steady_clock::now();
      waiting_.push_back(std::move(r));
    }
    cv_.notify_all();
    return id;
  }
  void cancel(uint64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    cancel_.insert(id);
  }
  SchedulerSnapshot snapshot() const override {
    std::lock_guard<std::mutex> lock(mu_);
    SchedulerSnapshot s;
    s.waiting = static_cast<int>(waiting_.size());
    s.running = static_cast<int>(running_.size());
    s.kv_cache_usage = running_.empty() ? 0.0 : 0.25;
    s.generated_tokens = generated_;
    s.cancelled = cancelled_;
    s.finished = finished_;
    return s;
  }
  // Holds every request in the queue until release() (to fill the server up).
  void hold() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = true;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = false;
  }
  uint64_t cancelled() const { return snapshot().cancelled; }
  uint64_t finished() const { return snapshot().finished; }
  // Options of the last submitted request.
  RequestOptions last_options() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  // Every submitted request's options, in order.
  std::vector<RequestOptions> submitted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  // Choices of the last submitted request.
  int last_choices() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_choices_;
  }

 private:
  struct Req {
    uint64_t id = 0;
    int choice = 0;
    RequestOptions opts;
    RequestCallbacks cb;
    StopFilter stops;
    int64_t generated = 0;
    std::chrono::steady_clock::time_point submitted;
  };

  void finish(Req& r, FinishReason why) {
    RequestReport rep;
    rep.id = r.id;
    rep.choice = r.choice;
    rep.reason = why;
    rep.prompt_tokens = static_cast<int64_t>(r.opts.prompt.size());
    rep.cached_tokens = rep.prompt_tokens / 2;
    rep.generated_tokens = r.generated;
    rep.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.submitted).count();
    r.cb.on_finish(rep);
  }

  // One token of request r; false when r finished.
  bool advance(Req& r) {
    if (r.opts.max_new_tokens == 0) {  // an echo request: the prompt only
      finish(r, FinishReason::kLength);
      return false;
    }
    const int32_t id = r.opts.prompt[static_cast<size_t>(r.generated + r.choice) % r.opts.prompt.size()];
    ++r.generated;
    ++generated_;
    TokenEvent ev;
    ev.id = id;
    ev.logprob = -0.5f;
    for (int k = 0; k < r.opts.top_logprobs; ++k) ev.top.push_back({id, -0.5f - k});
    if (r.cb.on_token) r.cb.on_token(ev);
    const std::string text = r.stops.push(tok_.decode(std::vector<int32_t>{id}));
    if (r.cb.on_text && !text.empty()) r.cb.on_text(text);
    if (r.stops.matched()) {
      finish(r, FinishReason::kStop);
      return false;
    }
    if (r.generated >= r.opts.max_new_tokens) {
      const std::string rest = r.stops.flush();
      if (r.cb.on_text && !rest.empty()) r.cb.on_text(rest);
      finish(r, FinishReason::kLength);
      return false;
    }
    return true;
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(step_ms_));
      while (!held_ && !waiting_.empty() && static_cast<int>(running_.size()) < max_running_) {
        last_ = waiting_.front().opts;
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
      }
      for (auto it = running_.begin(); it != running_.end();) {
        const bool cancelled = cancel_.count(it->id) > 0;
        bool alive = !cancelled;
        if (cancelled) {
          ++cancelled_;
          finish(*it, FinishReason::kCancelled);
        } else {
          alive = advance(*it);
          if (!alive) ++finished_;
        }
        it = alive ? std::next(it) : running_.erase(it);
      }
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if (!cancel_.count(it->id)) {
          ++it;
          continue;
        }
        ++cancelled_;
        finish(*it, FinishReason::kCancelled);
        it = waiting_.erase(it);
      }
    }
    for (auto& r : running_) finish(r, FinishReason::kCancelled);
    for (auto& r : waiting_) finish(r, FinishReason::kCancelled);
  }

  const Tokenizer& tok_;
  const int step_ms_;
  const int max_running_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Req> waiting_;
  std::deque<Req> running_;
  std::set<uint64_t> cancel_;
  RequestOptions last_;
  std::vector<RequestOptions> submitted_;
  int last_choices_ = 0;
  uint64_t next_id_ = 0, cancelled_ = 0, finished_ = 0;
  int64_t generated_ = 0;
  bool stop_ = false;
  bool held_ = false;
  std::thread thread_;
};

// The JSON events of an SSE body, and whether it ended with [DONE].
struct SseEvents {
  std::vector<nlohmann::json> chunks;
  bool done = false;
};
inline SseEvents sse_events(const std::string& body) {
  SseEvents e;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    const std::string payload = body.substr(at + 6, end - at - 6);
    at = end;
    if (payload == "[DONE]") {
      e.done = true;
      EXPECT_EQ(body.find("data: ", at), std::string::npos) << "events after [DONE]";
      break;
    }
    e.chunks.push_back(nlohmann::json::parse(payload));
  }
  return e;
}

inline std::string post_sse(httplib::Client& c, const std::string& path, const std::string& body) {
  std::string out;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    out.append(d, n);
    return true;
  };
  auto res = c.send(req);
  EXPECT_TRUE(res);
  if (res) {
    EXPECT_EQ(res->status, 200) << out;
  }
  return out;
}

// A real server on a loopback port over an EchoScheduler.
class ServerFixture : public ::testing::Test {
 protected:
  // vocab: the served tokenizer's file (the stories model's by default).
  void start(HttpOptions opts = {}, bool load = true, const std::string& vocab = kStoriesGguf) {
    ASSERT_TRUE(std::filesystem::exists(vocab)) << "missing test data " << vocab;
    tok_ = Tokenizer::from_path(vocab);
    tmpl_ = make_chat_template("chatml", std::nullopt);
    model_.id = "stories";
    model_.tok = tok_.get();
    model_.tmpl = tmpl_.get();
    model_.stop_ids = tok_->special().stop_ids;
    model_.max_session_tokens = 256;
    model_.default_max_tokens = 8;
    model_.created = 1700000000;
    sched_ = std::make_unique<EchoScheduler>(*tok_);
    opts.host = "127.0.0.1";
    opts.port = 0;
    server_ = std::make_unique<HttpServer>(opts);
    port_ = server_->bind();
    server_->start();
    if (load) server_->set_model(model_, *sched_);
  }
  void TearDown() override {
    // Once every client has gone, the connections hold no request bytes (the
    // loop's accounting of buffered bytes has not leaked).
    for (int i = 0; server_ && i < 200 && server_->open_connections() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (server_ && server_->open_connections() == 0) {
      EXPECT_EQ(server_->buffered_request_bytes(), 0);
    }
    if (server_) server_->stop();
    server_.reset();
    sched_.reset();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(20, 0);
    return c;
  }

  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ChatFormat> tmpl_;
  ServedModel model_;
  std::unique_ptr<EchoScheduler> sched_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
};

}  // namespace og::server::test
