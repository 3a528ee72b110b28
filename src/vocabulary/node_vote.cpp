// SPDX-License-Identifier: Apache-2.0
#include <redlock/node_vote.hpp>

#include <array>

namespace redlock {

std::string_view to_string(node_state s) noexcept {
  switch (s) {
    case node_state::locked: return "locked";
    case node_state::refused: return "refused";
    case node_state::failed: return "failed";
    case node_state::unknown: return "unknown";
    case node_state::pending: return "pending";
  }
  return "?";
}

std::string describe(const node_vote& r) {
  std::string line = r.node;
  line.append(" ").append(to_string(r.state));
  // Failed and unknown carry the error; the others the time the reply took
  // (a pending master never replied within the round).
  if (r.error)
    line.append(": ").append(r.error.message());
  else if (r.state != node_state::pending)
    line.append(" (").append(std::to_string(r.latency.count())).append(" us)");
  return line;
}

std::string summarize(const std::vector<node_vote>& round) {
  constexpr std::array states{node_state::locked, node_state::refused, node_state::failed, node_state::unknown,
                              node_state::pending};
  std::string out;
  for (auto s : states) {
    std::size_t n = 0;
    for (auto& r : round) n += r.state == s;
    if (!n) continue;
    if (!out.empty()) out += ", ";
    out.append(std::to_string(n)).append(" ").append(to_string(s));
  }
  return out;
}

}  // namespace redlock
