// FunctionRef<R(Args...)>: a non-owning reference to a callable, two words,
// never allocating (std::function may allocate for a lambda that captures
// more than two pointers). Valid only while the callable it was made from
// lives: take it as a parameter of a function that calls it before returning
// (ThreadPool::parallel_for), never store it beyond that.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace og {

template <class Sig>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): stands in for a callable argument
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Args... a) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...);
        }) {}

  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

}  // namespace og
