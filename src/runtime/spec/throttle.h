// The fallback rule of speculation inside the scheduler: a session whose
// drafts keep failing stops proposing for a while, since its verify rows
// cost compute in every shared step (and a draft model's proposing costs
// forwards) while yielding nothing. Rule: when the last kWindow verify steps
// together accepted under kMinAcceptance of their draft tokens, the next
// kPauseSteps decode steps of that session are plain; then the window starts
// empty again. Only a session's own history counts, so one session's
// unpredictable text never stops another's speculation.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

namespace og {

class SpecThrottle {
 public:
  static constexpr int kWindow = 8;              // verify steps looked at
  static constexpr double kMinAcceptance = 0.1;  // accepted / draft tokens below this pauses
  static constexpr int kPauseSteps = 16;         // plain decode steps of a pause

  // Whether this decode step may propose; counts a paused step down.
  bool allow() {
    if (paused_ == 0) return true;
    --paused_;
    return false;
  }
  // A verify step's outcome: k draft tokens, `accepted` of them kept.
  void record(int64_t k, int64_t accepted) {
    window_.emplace_back(k, accepted);
    if (static_cast<int>(window_.size()) > kWindow) window_.pop_front();
    if (static_cast<int>(window_.size()) < kWindow) return;
    int64_t drafted = 0, kept = 0;
    for (const auto& [d, a] : window_) drafted += d, kept += a;
    if (static_cast<double>(kept) < kMinAcceptance * static_cast<double>(drafted)) {
      paused_ = kPauseSteps;
      ++pauses_;
      window_.clear();
    }
  }
  bool paused() const { return paused_ > 0; }
  int64_t pauses() const { return pauses_; }

 private:
  std::deque<std::pair<int64_t, int64_t>> window_;
  int paused_ = 0;
  int64_t pauses_ = 0;
};

}  // namespace og
