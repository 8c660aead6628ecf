// One way to give a project error enum its boost::system category.
#pragma once

#include <boost/system/error_category.hpp>
#include <string>

namespace ticketd {

/// The category of error enum E: a name ("ticketd.ticket") and `describe`, a switch over E
/// returning each enumerator's message (the compiler's -Wswitch then checks that every one has
/// a message) and nullptr past the switch; a value no enumerator names reads as `fallback`.
/// One static instance per enum, returned by its `x_category()` function. Thread safety: const.
template <class E>
class EnumCategory final : public boost::system::error_category {
 public:
  using Describe = const char* (*)(E) noexcept;

  EnumCategory(const char* name, Describe describe, const char* fallback) noexcept
      : name_(name), describe_(describe), fallback_(fallback) {}

  const char* name() const noexcept override { return name_; }
  std::string message(int ev) const override {
    const char* text = describe_(static_cast<E>(ev));
    return text != nullptr ? text : fallback_;
  }

 private:
  const char* name_;
  Describe describe_;
  const char* fallback_;
};

}  // namespace ticketd
