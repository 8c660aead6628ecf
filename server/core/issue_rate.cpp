#include "server/core/issue_rate.h"

#include <algorithm>
#include <future>
#include <utility>
#include <vector>

#include "server/base/log.h"
#include "server/base/parse_int.h"
#include "server/base/record_codec.h"

namespace ticketd {

bool IssueRateHistory::note(std::int64_t day, std::uint64_t values) {
  auto [it, inserted] = peaks.try_emplace(day, values);
  if (inserted) return values > 0;
  if (values <= it->second) return false;
  it->second = values;
  return true;
}

void IssueRateHistory::prune(std::int64_t today) {
  peaks.erase(peaks.begin(), peaks.lower_bound(today - kDays + 1));
}

std::uint64_t IssueRateHistory::peak_per_minute(std::int64_t today) const {
  std::uint64_t peak = 0;
  for (auto it = peaks.lower_bound(today - kDays + 1); it != peaks.end(); ++it) {
    peak = std::max(peak, it->second);
  }
  return peak;
}

std::string rate_key(std::string_view name) { return std::string(kRatePrefix) + std::string(name); }

std::string encode_rate_history(const IssueRateHistory& history) {
  std::string peaks;
  for (const auto& [day, values] : history.peaks) {
    if (!peaks.empty()) peaks += ',';
    peaks += std::to_string(day) + ':' + std::to_string(values);
  }
  return RecordWriter(1).add("peaks", peaks.empty() ? std::string("-") : peaks).finish();
}

std::optional<IssueRateHistory> decode_rate_history(std::string_view text) {
  const auto rec = RecordView::parse(text);
  if (!rec || !rec->version_is(1)) return std::nullopt;
  const auto peaks = rec->get("peaks");
  if (!peaks) return std::nullopt;
  IssueRateHistory h;
  if (*peaks == "-") return h;
  if (peaks->ends_with(',')) return std::nullopt;
  std::string_view rest = *peaks;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto day = parse_int<std::int64_t>(item.substr(0, colon));
    const auto values = parse_u64(item.substr(colon + 1));
    if (!day || !values || !h.peaks.emplace(*day, *values).second) return std::nullopt;
  }
  return h;
}

IssueRateTracker::IssueRateTracker(TicketService& service, GroupCommitter& committer,
                                   const Clock& clock)
    : service_(service), committer_(committer), clock_(clock) {}

DetailedResult<void> IssueRateTracker::load(CounterStore& store) {
  auto stored = store.scan(kRatePrefix);
  if (!stored) return stored.error();
  std::lock_guard lock(mutex_);
  for (const auto& [key, value] : *stored) {
    const std::string name = key.substr(kRatePrefix.size());
    auto h = decode_rate_history(value);
    if (!h) {
      // A rate is advice for a restore, not a counter: an unreadable one starts again.
      log::warn("issue rate of '" + name + "': unreadable record '" + value + "', starting anew",
                {{"sequence", name}});
      continue;
    }
    histories_[name] = std::move(*h);
  }
  const std::int64_t now = clock_.now_unix_ms();
  for (const auto& info : service_.list()) {
    marks_[info.spec.name] = Mark{info.handed_out, now, service_.find(info.spec.name).get()};
  }
  return {};
}

void IssueRateTracker::sample(std::function<void(DetailedResult<void>)> done) {
  const std::int64_t now = clock_.now_unix_ms();
  const std::int64_t today = now / IssueRateHistory::kDayMs;
  std::vector<Mutation> writes;
  {
    std::lock_guard lock(mutex_);
    for (const auto& info : service_.list()) {
      const std::string& name = info.spec.name;
      const void* identity = service_.find(name).get();
      auto [it, fresh] = marks_.try_emplace(name, Mark{info.handed_out, now, identity});
      Mark& mark = it->second;
      if (!fresh && mark.identity == identity && now > mark.at_ms &&
          info.handed_out >= mark.handed_out) {
        // A window far shorter than a minute would scale a burst up to a rate never seen;
        // one far longer averages a burst down (the daemon samples every minute).
        const std::int64_t window_ms = std::max<std::int64_t>(now - mark.at_ms, 1000);
        const auto delta = static_cast<unsigned __int128>(info.handed_out - mark.handed_out);
        const auto per_minute = static_cast<std::uint64_t>(std::min<unsigned __int128>(
            delta * 60000 / static_cast<unsigned>(window_ms), UINT64_MAX));
        IssueRateHistory& h = histories_[name];
        if (h.note(today, per_minute)) unwritten_[name] = true;
      }
      mark = Mark{info.handed_out, now, identity};
    }
    for (auto& [name, h] : histories_) {
      const auto before = h.peaks.size();
      h.prune(today);
      if (h.peaks.size() != before) unwritten_[name] = true;
    }
    for (const auto& [name, _] : unwritten_) {
      writes.push_back(Mutation{rate_key(name), encode_rate_history(histories_[name])});
    }
    unwritten_.clear();
  }
  if (writes.empty()) {
    if (done) done({});
    return;
  }
  std::vector<std::string> names;
  names.reserve(writes.size());
  for (const auto& w : writes) names.push_back(w.key.substr(kRatePrefix.size()));
  committer_.submit(std::move(writes), [this, names = std::move(names),
                                        done = std::move(done)](const DetailedResult<void>& r) {
    if (!r) {
      std::lock_guard lock(mutex_);
      for (const auto& n : names) unwritten_[n] = true;
    }
    if (done) done(r);
  });
}

std::map<std::string, IssueRateHistory> IssueRateTracker::histories() const {
  std::lock_guard lock(mutex_);
  return {histories_.begin(), histories_.end()};
}

DetailedResult<void> sample_and_wait(IssueRateTracker& tracker) {
  std::promise<DetailedResult<void>> sampled;
  tracker.sample([&sampled](const DetailedResult<void>& r) { sampled.set_value(r); });
  return sampled.get_future().get();
}

}  // namespace ticketd
