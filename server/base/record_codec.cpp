#include "server/base/record_codec.h"

#include <stdexcept>

namespace ticketd {

RecordWriter::RecordWriter(std::uint64_t version) { add("v", version); }

RecordWriter& RecordWriter::add(std::string_view key, std::string_view value) {
  if (key.empty() || key.find_first_of(" =") != std::string_view::npos ||
      value.find(' ') != std::string_view::npos) {
    throw std::invalid_argument("record field '" + std::string(key) +
                                "' would not read back: a space or '=' where none may be");
  }
  if (!text_.empty()) text_ += ' ';
  text_.append(key).append("=").append(value);
  return *this;
}

std::string RecordWriter::finish() {
  std::string out = std::move(text_);
  text_.clear();
  return out;
}

std::string RecordWriter::finish(std::string_view rest_key, std::string_view rest) {
  if (rest_key.empty() || rest_key.find_first_of(" =") != std::string_view::npos) {
    throw std::invalid_argument("record field '" + std::string(rest_key) + "' is not a key");
  }
  if (!text_.empty()) text_ += ' ';
  text_.append(rest_key).append("=").append(rest);
  return finish();
}

std::optional<RecordView> RecordView::parse(std::string_view text, std::string_view rest_key) {
  RecordView view;
  auto add = [&view](std::string_view key, std::string_view value) {
    if (key.empty() || view.get(key)) return false;
    if (key == "v") {
      view.version_ = parse_u64(value);
      if (!view.version_) return false;
    }
    view.fields_.emplace_back(key, value);
    return true;
  };
  while (!text.empty()) {
    if (text.front() == ' ') {
      text.remove_prefix(1);
      continue;
    }
    if (!rest_key.empty() && text.size() > rest_key.size() && text.starts_with(rest_key) &&
        text[rest_key.size()] == '=') {
      if (!add(rest_key, text.substr(rest_key.size() + 1))) return std::nullopt;
      break;
    }
    const auto end = text.find(' ');
    const auto field = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end);
    const auto eq = field.find('=');
    if (eq == std::string_view::npos || !add(field.substr(0, eq), field.substr(eq + 1))) {
      return std::nullopt;
    }
  }
  return view;
}

std::optional<std::string_view> RecordView::get(std::string_view key) const {
  for (const auto& [k, v] : fields_) {
    if (k == key) return v;
  }
  return std::nullopt;
}

}  // namespace ticketd
