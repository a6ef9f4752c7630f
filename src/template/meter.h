// The bounds of one render in time and memory (RenderOptions in template.h),
// reachable from code that has no Interp at hand: the deep walks over values
// (equality, ordering, repr, JSON), string searches and string methods charge
// the meter of the render running on their thread as they go, so that one
// operation on a huge (or hugely shared) value stops midway with an og::Error
// instead of running for minutes or allocating gigabytes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace og::jinja {

struct RenderOptions;

// Work units: a byte of string text copied, searched or compared costs one;
// a container element visited, copied or compared costs this many.
constexpr int64_t kElementWork = 16;
// An expression evaluated or a statement run (the interpreter's own overhead:
// scopes, argument lists, lookups), so that a cheap step repeated 2^60 times
// by recursive macros is stopped by the budget, not only by the deadline.
constexpr int64_t kStepWork = 64;
// What a list item or dict entry is taken to occupy when a container's size
// is checked against max_output_bytes (at least sizeof(Value), see meter.cpp).
constexpr size_t kElementBytes = 128;

// The memory held by the values a render has built: counted when a string,
// list or dict is made, uncounted when its last copy is freed.
struct LiveBytes {
  std::atomic<int64_t> bytes{0};
};

// Whether the renders on this thread are still wanted: while a CancelCheck
// lives, the meter of each render on its thread calls it every kCancelPollMs
// of rendering and stops the render with an og::Error once it says true (the
// server's client left, or the server is stopping), so a slow template does
// not run to its deadline for nobody.
constexpr int64_t kCancelPollMs = 10;

class CancelCheck {
 public:
  explicit CancelCheck(std::function<bool()> cancelled);
  ~CancelCheck();
  CancelCheck(const CancelCheck&) = delete;
  CancelCheck& operator=(const CancelCheck&) = delete;

  bool cancelled() const { return cancelled_(); }
  static const CancelCheck* current() { return current_; }

 private:
  static constinit thread_local const CancelCheck* current_;
  std::function<bool()> cancelled_;
  const CancelCheck* prev_;
};

class Meter {
 public:
  // Becomes this thread's meter until destroyed (then the previous one is again).
  explicit Meter(const RenderOptions& opt);
  ~Meter();
  Meter(const Meter&) = delete;
  Meter& operator=(const Meter&) = delete;

  // og::Error once the work budget is spent or the deadline has passed.
  void charge(int64_t units) {
    work_ += units;
    if (work_ >= next_check_) check();
  }
  // og::Error when one value (a string, or a container's footprint) would be
  // larger than max_output_bytes; call it before building the value.
  void check_bytes(size_t bytes, const char* what = "output or a string") const;
  int64_t max_bytes() const { return max_bytes_; }
  // Counts `bytes` more of live values; og::Error past max_memory_bytes.
  std::shared_ptr<LiveBytes> hold(size_t bytes);
  // og::Error when the live values plus `extra` bytes held elsewhere (output
  // buffers) pass max_memory_bytes.
  void check_memory(size_t extra) const;

  static Meter* current() { return current_; }

 private:
  static constinit thread_local Meter* current_;

  void check();

  int64_t budget_;
  int64_t max_bytes_;
  int64_t max_ms_;
  int64_t max_memory_;
  std::shared_ptr<LiveBytes> live_ = std::make_shared<LiveBytes>();
  int64_t work_ = 0;
  int64_t next_check_ = 0;
  std::chrono::steady_clock::time_point start_;
  const CancelCheck* cancel_;  // the thread's CancelCheck when the render began; may be null
  std::chrono::steady_clock::time_point next_poll_;
  Meter* prev_;
};

// The same against this thread's render; outside a render they do nothing
// (values built from JSON variables before a render are bounded by their caller).
inline void charge_work(int64_t units) {
  if (Meter* m = Meter::current()) m->charge(units);
}
inline void check_bytes(size_t bytes, const char* what = "output or a string") {
  if (Meter* m = Meter::current()) m->check_bytes(bytes, what);
}
// A container of n items (each kElementBytes) plus `text` bytes of new strings.
void check_items(size_t n, size_t text = 0);

// The heap part of a value (its text, items or entries), counted as `bytes`
// of the current render's live memory until its last copy is freed.
template <class T>
std::shared_ptr<T> track(T obj, size_t bytes) {
  Meter* m = Meter::current();
  if (!m) return std::make_shared<T>(std::move(obj));
  std::shared_ptr<LiveBytes> live = m->hold(bytes);
  return std::shared_ptr<T>(new T(std::move(obj)), [live = std::move(live), bytes](T* p) {
    live->bytes.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
    delete p;
  });
}

}  // namespace og::jinja
