// Result<T, E>: the one way a function returns a recoverable error.
//
// The convention, stated once (docs/coding.md has the whole policy):
//   - A function that can fail on its input (a file, a line, a database, the
//     kernel) returns Result<T, E>: a T, or an E saying why. Result<void, E>
//     is success or an E.
//   - It returns `value;` on success and `unexpected(error);` on failure.
//   - The caller tests `if (!r)` (or `r.has_value()`) before using `*r`,
//     `r->member` or `r.value()`, and reads `r.error()` only on failure.
//   - E is Error (a message) unless callers need more than a message; then it
//     is a domain struct that still carries the message (ParseError,
//     StoreError, CaptureError, ReadError). Every message names the input and
//     the place in it: the file, line, field or key.
//   - Exceptions are for the CLI's fatal user errors only, caught once in
//     cli/main.cc; the daemon returns its exit code from run_daemon().
//
// Shaped like C++23 std::expected, member for member, so that this header
// can be dropped for <expected> by a search and replace (Result< ->
// std::expected<, Unexpected< and unexpected( -> std::unexpected< and
// std::unexpected(; the default E must then be spelled out). The one
// difference: value(), error(), * and -> on the wrong side throw
// std::bad_variant_access here (std::expected: value() throws
// bad_expected_access, the others are undefined). Pure: no syscalls.
#pragma once

#include <concepts>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace rssaudit {

// The default error: what went wrong, naming the input and where in it.
struct Error {
  std::string message;
};

// An error on its way into a Result: `return unexpected(error);`.
template <class E>
class Unexpected {
 public:
  explicit Unexpected(E error) : error_(std::move(error)) {}

  E& error() & { return error_; }
  const E& error() const& { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  E error_;
};

template <class E>
Unexpected<std::decay_t<E>> unexpected(E&& error) {
  return Unexpected<std::decay_t<E>>(std::forward<E>(error));
}

// Not part of the interface: std::expected has neither.
namespace result_detail {

template <class U>
inline constexpr bool kIsUnexpected = false;
template <class G>
inline constexpr bool kIsUnexpected<Unexpected<G>> = true;

// What Result<T, E> and Result<void, E> share: V is T, or std::monostate.
template <class V, class E>
class ResultBase {
 public:
  using error_type = E;

  template <class G>
  requires std::constructible_from<E, const G&> ResultBase(
      const Unexpected<G>& e)
      : v_(std::in_place_index<1>, e.error()) {}
  template <class G>
  requires std::constructible_from<E, G> ResultBase(Unexpected<G>&& e)
      : v_(std::in_place_index<1>, std::move(e).error()) {}

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  E& error() & { return std::get<1>(v_); }
  const E& error() const& { return std::get<1>(v_); }
  E&& error() && { return std::get<1>(std::move(v_)); }

 protected:
  template <class... Args>
  explicit ResultBase(std::in_place_index_t<0>, Args&&... args)
      : v_(std::in_place_index<0>, std::forward<Args>(args)...) {}

  std::variant<V, E> v_;
};

}  // namespace result_detail

template <class T, class E = Error>
class [[nodiscard]] Result : public result_detail::ResultBase<T, E> {
  using Base = result_detail::ResultBase<T, E>;

 public:
  using value_type = T;
  using Base::Base;

  Result() requires std::default_initializable<T>
      : Base(std::in_place_index<0>) {}
  // From a value, implicitly when U converts to T: `return value;`.
  template <class U = T>
  requires(std::constructible_from<T, U> &&
           !std::same_as<std::remove_cvref_t<U>, Result> &&
           !result_detail::kIsUnexpected<
               std::remove_cvref_t<U>>) explicit(!std::convertible_to<U, T>)
      Result(U&& value)
      : Base(std::in_place_index<0>, std::forward<U>(value)) {}

  T& value() & { return std::get<0>(this->v_); }
  const T& value() const& { return std::get<0>(this->v_); }
  T&& value() && { return std::get<0>(std::move(this->v_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <class U>
  T value_or(U&& fallback) const& {
    return this->has_value() ? value()
                             : static_cast<T>(std::forward<U>(fallback));
  }
  template <class U>
  T value_or(U&& fallback) && {
    return this->has_value() ? std::move(*this).value()
                             : static_cast<T>(std::forward<U>(fallback));
  }
};

template <class E>
class [[nodiscard]] Result<void, E>
    : public result_detail::ResultBase<std::monostate, E> {
  using Base = result_detail::ResultBase<std::monostate, E>;

 public:
  using value_type = void;
  using Base::Base;

  // Success.
  Result() : Base(std::in_place_index<0>) {}

  // Throws on an error, like the other value()s.
  void value() const { static_cast<void>(std::get<0>(this->v_)); }
  void operator*() const {}
};

}  // namespace rssaudit
