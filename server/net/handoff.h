// How the answer of an engine call gets back to the session that made the call.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

namespace ticketd::net {

/// Hands the continuations of engine calls back to their session, so that nothing of a front
/// end (building a result, encoding it, the next statement, metrics) runs on the engine's
/// committer thread. The engine answers a call inline (a cached ticket) or later, on another
/// thread. A session brackets each call with begin() and end() and wraps every callback it
/// gives the engine with resume(). Then an answer
/// - on the session's own thread while the session runs (inline) runs at once;
/// - from another thread before end() is kept and run by end(), on the session's thread;
/// - from another thread after end() is posted to the session's executor, and runs there.
/// With no `post` (tests without an executor) a late answer runs where it arrives.
///
/// A call may fan out into several engine calls: the first answer kept before end() is run by
/// end(), any other is posted. Thread safety: begin() and end() run on the session's strand;
/// the wrapped callbacks on any thread. The session owns the object by shared_ptr and the
/// wrapped callbacks hold a reference, so an answer after the session ended is harmless.
class Handoff : public std::enable_shared_from_this<Handoff> {
 public:
  using Step = std::function<void()>;
  /// Runs a step on the session's executor (asio::post to the session's strand).
  using Post = std::function<void(Step)>;

  explicit Handoff(Post post = {}) : post_(std::move(post)) {}

  /// Before an engine call (or a statement that makes some), on the session's strand.
  void begin() {
    phase_.store(kCalling, std::memory_order_release);
    running_.store(std::this_thread::get_id(), std::memory_order_release);
  }

  /// After the call returned: runs the step of an answer that arrived meanwhile from another
  /// thread; from now on such answers are posted.
  void end() {
    running_.store(std::thread::id{}, std::memory_order_release);
    int expected = kCalling;
    if (phase_.compare_exchange_strong(expected, kReturned, std::memory_order_acq_rel)) return;
    // An answer is being kept or was: wait for the store (a move of a closure), then run it.
    while (phase_.load(std::memory_order_acquire) == kStoring) std::this_thread::yield();
    phase_.store(kReturned, std::memory_order_relaxed);
    Step step = std::move(kept_);
    kept_ = nullptr;
    run(step);
  }

  /// `then`, called with an engine answer of type T, resumes on the session.
  template <class T, class Then>
  [[nodiscard]] auto resume(Then then) {
    return [self = shared_from_this(), then = std::move(then)](T value) mutable {
      if (self->on_session()) return then(std::move(value));
      self->answer(
          [then = std::move(then), value = std::move(value)]() mutable { then(std::move(value)); });
    };
  }

  /// Whether the calling thread is the session's, inside begin()..end() or a resumed step.
  [[nodiscard]] bool on_session() const {
    return running_.load(std::memory_order_acquire) == std::this_thread::get_id();
  }

 private:
  static constexpr int kReturned = 0;  // no call in progress: an answer is posted
  static constexpr int kCalling = 1;   // inside a call: the first answer is kept for end()
  static constexpr int kStoring = 2;   // an answer is being kept
  static constexpr int kKept = 3;      // end() runs the kept answer

  // An answer from another thread, as a step to run on the session.
  void answer(Step step) {
    int expected = kCalling;
    if (phase_.compare_exchange_strong(expected, kStoring, std::memory_order_acq_rel)) {
      kept_ = std::move(step);
      phase_.store(kKept, std::memory_order_release);
      return;
    }
    if (!post_) return step();
    post_([self = shared_from_this(), step = std::move(step)] { self->run(step); });
  }

  // Runs a step on the session: answers it receives inline run at once.
  void run(const Step& step) {
    running_.store(std::this_thread::get_id(), std::memory_order_release);
    step();
    running_.store(std::thread::id{}, std::memory_order_release);
  }

  Post post_;
  Step kept_;
  std::atomic<int> phase_{kReturned};
  std::atomic<std::thread::id> running_{};
};

}  // namespace ticketd::net
