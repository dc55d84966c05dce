#include "audit/recorded_names.h"

#include <algorithm>

namespace rssaudit {

std::vector<std::optional<std::string>> RecordedNames::names_of(
    const std::vector<MmSummary>& mms) const {
  // Per (tgid, address): the indices of its mms, oldest first.
  std::map<std::pair<uint32_t, uint64_t>, std::vector<size_t>> lives;
  for (size_t i = 0; i < mms.size(); ++i)
    lives[{mms[i].tgid, mms[i].key.addr}].push_back(i);
  std::vector<std::optional<std::string>> out(mms.size());
  for (auto& [owner, indices] : lives) {
    const auto names = by_owner_.find(owner);
    if (names == by_owner_.end()) continue;
    std::sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      return mms[a].key.generation < mms[b].key.generation;
    });
    // Newest with newest: align the two lists at their ends.
    const std::vector<std::string>& comms = names->second;
    for (size_t k = 1; k <= std::min(indices.size(), comms.size()); ++k)
      out[indices[indices.size() - k]] = comms[comms.size() - k];
  }
  return out;
}

}  // namespace rssaudit
