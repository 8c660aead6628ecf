// A string hash for unordered containers looked up by std::string_view without a copy.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ticketd {

/// Hashes std::string, std::string_view and C strings alike (is_transparent), so find() with a
/// view builds no temporary std::string.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

/// An unordered map from names to T, looked up by string_view.
template <class T>
using StringMap = std::unordered_map<std::string, T, StringHash, std::equal_to<>>;

}  // namespace ticketd
