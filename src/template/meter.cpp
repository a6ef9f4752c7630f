// The render's meter (see meter.h): a work budget, a wall-clock deadline read
// every kClockStride units, and the size bound of one value.
#include "template/meter.h"

#include <algorithm>

#include "base/error.h"
#include "template/template.h"
#include "template/value.h"

namespace og::jinja {

static_assert(kElementBytes >= sizeof(Value), "a container's footprint must not be underestimated");

namespace {

// Units between two readings of the clock: a few microseconds of work at most,
// so the deadline is seen promptly and the clock costs nothing measurable.
constexpr int64_t kClockStride = 1 << 16;

}  // namespace

namespace {
RenderLimits g_limits;
}  // namespace

const RenderLimits& render_limits() { return g_limits; }
void set_render_limits(const RenderLimits& limits) { g_limits = limits; }

constinit thread_local Meter* Meter::current_ = nullptr;
constinit thread_local const CancelCheck* CancelCheck::current_ = nullptr;

CancelCheck::CancelCheck(std::function<bool()> cancelled) : cancelled_(std::move(cancelled)), prev_(current_) {
  current_ = this;
}

CancelCheck::~CancelCheck() { current_ = prev_; }

Meter::Meter(const RenderOptions& opt)
    : budget_(opt.max_work > 0 ? opt.max_work : 64 * std::max<int64_t>(opt.max_output_bytes, 1 << 16)),
      max_bytes_(opt.max_output_bytes),
      max_ms_(opt.max_render_ms),
      max_memory_(opt.max_memory_bytes),
      next_check_(std::min<int64_t>(kClockStride, budget_ + 1)),
      start_(std::chrono::steady_clock::now()),
      cancel_(CancelCheck::current()),
      next_poll_(start_ + std::chrono::milliseconds(kCancelPollMs)),
      prev_(current_) {
  current_ = this;
}

Meter::~Meter() { current_ = prev_; }

void Meter::check() {
  if (work_ > budget_)
    fail("the render's work budget (", budget_, " units) is spent: the template computes too much; giving up");
  next_check_ = std::min(work_ + kClockStride, budget_ + 1);
  if (max_ms_ <= 0 && !cancel_) return;
  const auto now = std::chrono::steady_clock::now();
  if (cancel_ && now >= next_poll_) {
    next_poll_ = now + std::chrono::milliseconds(kCancelPollMs);
    if (cancel_->cancelled()) fail("the render was cancelled: its client left or the server is stopping");
  }
  if (max_ms_ <= 0) return;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count();
  if (ms > max_ms_) fail("the render ran longer than its time limit (", max_ms_, " ms); giving up");
}

void Meter::check_bytes(size_t bytes, const char* what) const {
  if (bytes > static_cast<size_t>(std::max<int64_t>(max_bytes_, 0)))
    fail(what, " grows beyond ", max_bytes_, " bytes");
}

void Meter::check_memory(size_t extra) const {
  const int64_t now = live_->bytes.load(std::memory_order_relaxed);
  if (extra > static_cast<size_t>(INT64_MAX - now) || now + static_cast<int64_t>(extra) > max_memory_)
    fail("the template's values would take more than ", max_memory_, " bytes of memory; giving up");
}

std::shared_ptr<LiveBytes> Meter::hold(size_t bytes) {
  check_memory(bytes);
  live_->bytes.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  return live_;
}

void check_items(size_t n, size_t text) {
  Meter* m = Meter::current();
  if (!m) return;
  // Saturate instead of wrapping: n may come from an attacker's repeat count.
  size_t bytes = n > SIZE_MAX / kElementBytes ? SIZE_MAX : n * kElementBytes;
  bytes = bytes > SIZE_MAX - text ? SIZE_MAX : bytes + text;
  m->check_bytes(bytes, "a list or dict");
}

}  // namespace og::jinja
