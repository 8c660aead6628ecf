// How a session waits for the engine: the one mechanism both front ends use.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <utility>

namespace ticketd::net {

/// Brings the answers of a session's engine calls back to the session, so that nothing of a
/// front end (building a result, encoding it, the next statement, metrics) runs on the
/// engine's committer thread. The engine answers a call inline (a cached ticket) or later, on
/// another thread. A session brackets each call with begin() and end() and wraps every
/// callback it gives the engine with resume(). Then an answer
/// - on the session's own thread while the session runs (inline) runs at once;
/// - from another thread before end() is kept and run by end(), on the session's thread;
/// - from another thread after end() is posted to the session's executor, and runs there.
/// With no `post` (tests without an executor) a late answer runs where it arrives.
///
/// A call may fan out into several engine calls: the first answer kept before end() is run by
/// end(), any other is posted. Thread safety: begin() and end() run on the session's strand;
/// the wrapped callbacks on any thread. The session owns the object by shared_ptr and the
/// wrapped callbacks hold a reference, so an answer after the session ended is harmless.
/// AwaitedCompletion (awaited_completion.h) adds what the session's coroutine waits on; CallLoop is
/// how a run of calls (statements, items, names) goes on after each answer.
class Completion : public std::enable_shared_from_this<Completion> {
 public:
  using Step = std::function<void()>;
  /// Runs a step on the session's executor (asio::post to the session's strand).
  using Post = std::function<void(Step)>;

  explicit Completion(Post post = {}) : post_(std::move(post)) {}

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

  /// Whether post() reaches an executor (false in tests built without one).
  [[nodiscard]] bool can_post() const { return static_cast<bool>(post_); }

  /// Runs `step` later on the session, as a step of its own (a long run yielding its thread).
  void post(Step step) {
    post_([self = shared_from_this(), step = std::move(step)] { self->run(step); });
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
    post(std::move(step));
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

/// A run of calls that may each answer inline or later: a COM_QUERY's statements, a SELECT's
/// NEXTVAL items, a DROP's names. An inline answer lets the run's loop go on instead of
/// recursing (10,000 statements need no deeper stack than one); a later one continues the run
/// from its answer, the loop having returned. The phase is atomic for tests without an
/// executor, where a late answer runs on the engine's thread while the loop may still be
/// returning; in a session every answer reaches the run on its strand (Completion).
class CallLoop {
 public:
  /// Before each call.
  void calling() { phase_.store(kCalling); }
  /// In the call's answer: true when the call has not returned yet (the loop goes on after
  /// it); false when the loop returned and this answer must continue the run.
  [[nodiscard]] bool answered_inline() {
    int expected = kCalling;
    return phase_.compare_exchange_strong(expected, kInline);
  }
  /// After the call returned: true when its answer comes later (the loop returns and the
  /// answer continues the run).
  [[nodiscard]] bool answers_later() {
    int expected = kCalling;
    return phase_.compare_exchange_strong(expected, kLater);
  }

 private:
  static constexpr int kCalling = 0;
  static constexpr int kInline = 1;
  static constexpr int kLater = 2;
  std::atomic<int> phase_{kCalling};
};

}  // namespace ticketd::net
