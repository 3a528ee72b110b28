// SPDX-License-Identifier: Apache-2.0
#include "probe_reading.hpp"

namespace redlock::fault {

namespace {

// -WRONGTYPE: the key is there, of another kind than ours (a string where
// we hold a hash field or the other way round): an answer, and not ours.
bool wrong_type(const probe_reply& r) {
  return r.is == probe_reply::type::error && r.text.rfind("WRONGTYPE", 0) == 0;
}

}  // namespace

master_view judge_master_reading(const probe_reply& owner, const probe_reply& pttl, const std::string& token,
                                 bool hash, time_point replied, double rate) {
  using t = probe_reply::type;
  master_view v;  // unreadable
  if (pttl.is != t::integer) return v;
  if (wrong_type(owner) || pttl.integer == -2) {
    v.is = master_view::state::not_ours;
    return v;
  }
  bool answered = hash ? owner.is == t::integer : owner.is == t::string || owner.is == t::nil;
  if (!answered) return v;
  bool ours = hash ? owner.integer == 1 : owner.is == t::string && owner.text == token;
  if (!ours) {
    v.is = master_view::state::not_ours;
  } else if (pttl.integer == -1) {  // ours with no expiry at all
    v.is = master_view::state::ours;
    v.expires = time_point::max();
  } else {
    // PTTL is in the master's time; its key lives pttl / rate of ours.
    v.is = master_view::state::ours;
    v.expires = replied + std::chrono::duration_cast<steady::duration>(
                              std::chrono::duration<double, std::milli>(static_cast<double>(pttl.integer) / rate));
  }
  return v;
}

}  // namespace redlock::fault
