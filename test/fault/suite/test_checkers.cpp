// SPDX-License-Identifier: Apache-2.0
// Each checker of the fault suite against hand-built histories: a BAD one in
// which it must report the violation, and a good one that must pass.
#define BOOST_TEST_MODULE unit_fault_checkers
#include <boost/test/unit_test.hpp>

#include "checkers.hpp"
#include "probe_reading.hpp"
#include "register_check.hpp"

#include <algorithm>
#include <sstream>

using namespace std::chrono_literals;
using namespace redlock::fault;

namespace {

// Builds histories with times in ms after an origin.
struct builder {
  time_point t0 = steady::now();
  std::vector<op> ops;

  time_point at(double ms) const {
    return t0 + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double, std::milli>(ms));
  }
  std::size_t push(op o) {
    o.id = ops.size();
    ops.push_back(std::move(o));
    return ops.back().id;
  }
  // A successful acquisition [invoke, done] valid until `until`.
  std::size_t acquire(int client, const std::string& r, double invoke, double done, double until,
                      std::optional<std::uint64_t> fence = std::nullopt) {
    op o;
    o.client = client;
    o.resource = r;
    o.kind = op_kind::acquire;
    o.invoke = at(invoke);
    o.completion = at(done);
    o.result = outcome::ok;
    o.valid_until = at(until);
    o.fence = fence;
    return push(o);
  }
  // A semaphore holder (`permits` in all) of slot `permit` (none: a
  // holder of a semaphore without slots).
  std::size_t permit(int client, const std::string& r, unsigned permits, std::optional<unsigned> slot, double done,
                     double until, std::optional<std::uint64_t> fence = std::nullopt) {
    auto id = acquire(client, r, done - 1, done, until, fence);
    ops[id].permits = permits;
    ops[id].permit = slot;
    return id;
  }
  // A read-write hold: a read (shared) or a write.
  std::size_t rw(int client, const std::string& r, bool read, double done, double until,
                 std::optional<std::uint64_t> fence = std::nullopt) {
    auto id = acquire(client, r, done - 1, done, until, fence);
    ops[id].shared = read;
    return id;
  }
  // A mutex over several names held together, with one token per name.
  std::size_t set(int client, std::vector<std::string> names, double done, double until,
                  std::vector<std::uint64_t> fences = {}) {
    auto id = acquire(client, names.front(), done - 1, done, until);
    ops[id].names = std::move(names);
    ops[id].fences = std::move(fences);
    return id;
  }
  // A leader's term with its epoch.
  std::size_t leader(int client, const std::string& r, double done, double until, std::uint64_t epoch) {
    auto id = acquire(client, r, done - 1, done, until, epoch);
    ops[id].leader = true;
    ops[id].renewed = true;
    return id;
  }
  std::size_t failed_acquire(int client, const std::string& r, double invoke, double done) {
    op o;
    o.client = client;
    o.resource = r;
    o.kind = op_kind::acquire;
    o.invoke = at(invoke);
    o.completion = at(done);
    o.result = outcome::fail;
    return push(o);
  }
  std::size_t release(std::size_t acquire_id, double invoke, double done) {
    op o;
    o.client = ops[acquire_id].client;
    o.resource = ops[acquire_id].resource;
    o.kind = op_kind::release;
    o.acquire_op = acquire_id;
    o.invoke = at(invoke);
    o.completion = at(done);
    o.result = outcome::ok;
    return push(o);
  }
  std::size_t write(int client, const std::string& r, std::uint64_t token, double invoke, double done, outcome res) {
    op o;
    o.client = client;
    o.resource = r;
    o.kind = op_kind::write;
    o.token = token;
    o.invoke = at(invoke);
    o.completion = at(done);
    o.result = res;
    return push(o);
  }
  std::size_t fault(const std::string& type, double invoke, std::optional<double> healed) {
    op o;
    o.resource = type;
    o.kind = op_kind::fault;
    o.invoke = at(invoke);
    if (healed) o.completion = at(*healed);
    o.result = outcome::ok;
    return push(o);
  }
};

std::string text(const std::vector<violation>& v) {
  std::ostringstream os;
  for (auto& x : v) os << x << "\n";
  return os.str();
}

}  // namespace

// ---- (a) exclusion ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(exclusion_reports_overlapping_holders) {
  builder b;
  auto a1 = b.acquire(0, "r", 0, 2, 100);
  b.release(a1, 150, 151);                  // released after its validity: window ends at 100
  auto a2 = b.acquire(1, "r", 40, 60, 300); // begins at 60, inside c0's window
  auto v = check_exclusion(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].checker == "exclusion");
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{a1, a2}));
  BOOST_TEST(v[0].message.find("overlap by 40.000 ms") != std::string::npos, v[0].message);
}

BOOST_AUTO_TEST_CASE(exclusion_uses_the_release_and_the_deadline) {
  builder b;
  // c0 releases at 50 (window [2, 50]); c1 acquires at 55.
  auto a1 = b.acquire(0, "r", 0, 2, 100);
  b.release(a1, 50, 52);
  auto a2 = b.acquire(1, "r", 10, 55, 200);
  // c1 never releases: its window ends at its deadline 200; c2 begins at 201.
  b.acquire(2, "r", 150, 201, 400);
  // Another resource may be held at the same time.
  b.acquire(3, "other", 0, 60, 300);
  // A window that is empty (handler ran after the deadline) is no window.
  b.acquire(3, "r", 0, 210, 205);
  // Failed acquisitions have no window.
  b.failed_acquire(0, "r", 60, 80);
  BOOST_TEST(check_exclusion(b.ops).empty(), text(check_exclusion(b.ops)));
  (void)a2;
}

BOOST_AUTO_TEST_CASE(exclusion_sees_overlap_with_an_earlier_long_window) {
  builder b;
  b.acquire(0, "r", 0, 1, 1000);   // long window
  b.acquire(1, "r", 0, 10, 20);    // inside it
  b.acquire(2, "r", 0, 500, 600);  // also inside the first, not the second
  auto v = check_exclusion(b.ops);
  BOOST_TEST(v.size() == 2u, text(v));
}

// A re-entry is the hold it re-entered: overlapping it is no violation, and
// it keeps that hold's token. Once the first level is released, the
// re-entry's window still excludes everyone else (the bad history: another
// holder inside it), and a re-entry does not hide a third holder that
// overlaps the hold it re-entered.
BOOST_AUTO_TEST_CASE(exclusion_judges_a_reentry_as_the_hold_it_reentered) {
  builder good;
  auto first = good.acquire(0, "r", 0, 1, 1000, 4);
  auto again = good.acquire(0, "r", 0, 2, 1000, 4);
  good.ops[again].reentry_of = first;
  good.release(first, 50, 51);
  good.release(again, 80, 81);
  good.acquire(1, "r", 82, 83, 200, 5);
  BOOST_TEST(check_exclusion(good.ops).empty(), text(check_exclusion(good.ops)));
  BOOST_TEST(check_fence_order(good.ops).empty(), text(check_fence_order(good.ops)));
  // The first level's release comes after the re-entry's window began: the
  // same hold, no takeover (this was reported before re-entries were judged
  // as their hold by (i) too).
  BOOST_TEST(check_release_after_takeover(good.ops).empty(), text(check_release_after_takeover(good.ops)));

  builder bad = good;
  auto intruder = bad.acquire(2, "r", 60, 61, 300);  // after the first level's release, inside the re-entry
  auto v = check_exclusion(bad.ops);
  BOOST_TEST_REQUIRE(v.size() >= 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{again, intruder}));

  builder hidden;  // a long re-entry reaches furthest; the hold's other holder is still seen
  auto h1 = hidden.acquire(0, "r", 0, 1, 1000);
  auto h2 = hidden.acquire(1, "r", 0, 2, 50);  // overlaps h1, and the re-entry of h1: reported twice
  auto h3 = hidden.acquire(0, "r", 0, 3, 2000);
  hidden.ops[h3].reentry_of = h1;
  auto h4 = hidden.acquire(2, "r", 0, 1500, 1600);  // inside the re-entry's window
  auto w = check_exclusion(hidden.ops);
  BOOST_TEST(w.size() == 3u, text(w));
  (void)h2;
  (void)h4;
}

// ---- (b) fence order ------------------------------------------------------------

BOOST_AUTO_TEST_CASE(fence_order_reports_a_token_that_went_backwards) {
  builder b;
  auto a1 = b.acquire(0, "r", 0, 1, 50, 7);
  b.release(a1, 20, 21);
  auto a2 = b.acquire(1, "r", 22, 25, 80, 5);  // later holder, lower token
  auto v = check_fence_order(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{a1, a2}));
  // Equal tokens for two holders are a violation as well.
  builder e;
  e.acquire(0, "r", 0, 1, 10, 3);
  e.acquire(1, "r", 11, 12, 20, 3);
  BOOST_TEST(check_fence_order(e.ops).size() == 1u);
}

BOOST_AUTO_TEST_CASE(fence_order_passes_increasing_tokens_per_resource) {
  builder b;
  b.acquire(0, "r", 0, 1, 10, 1);
  b.acquire(1, "r", 11, 12, 20, 4);  // gaps are fine (failed attempts increment)
  b.acquire(2, "s", 0, 1, 30, 2);    // another resource has its own order
  b.acquire(0, "r", 21, 22, 30, 5);
  b.acquire(0, "s", 31, 32, 40, 3);
  BOOST_TEST(check_fence_order(b.ops).empty(), text(check_fence_order(b.ops)));
}

// ---- (c) stale writes -------------------------------------------------------------

BOOST_AUTO_TEST_CASE(stale_write_accepted_is_reported) {
  builder b;
  auto w1 = b.write(1, "r", 9, 0, 2, outcome::ok);
  auto w2 = b.write(0, "r", 8, 5, 6, outcome::ok);  // after 9 was accepted: must have been refused
  auto v = check_stale_writes(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{w1, w2}));
}

BOOST_AUTO_TEST_CASE(unjustified_rejection_is_reported) {
  builder b;
  b.write(0, "r", 5, 0, 1, outcome::ok);
  b.write(1, "r", 6, 2, 3, outcome::fail);  // nothing higher was ever written
  auto v = check_stale_writes(b.ops);
  BOOST_TEST(v.size() == 1u, text(v));
}

BOOST_AUTO_TEST_CASE(stale_writes_good_history) {
  builder b;
  b.write(0, "r", 5, 0, 1, outcome::ok);
  b.write(0, "r", 5, 2, 3, outcome::ok);    // same holder again: equal token accepted
  b.write(1, "r", 6, 4, 5, outcome::ok);
  b.write(0, "r", 5, 6, 7, outcome::fail);  // the stale holder is refused
  // Concurrent with the accepted 8: either order is fine for 7.
  b.write(2, "r", 8, 10, 20, outcome::ok);
  b.write(1, "r", 7, 12, 14, outcome::ok);
  // A rejection justified by a write whose outcome is unknown (it applied).
  b.write(3, "r", 10, 30, 31, outcome::unknown);
  b.write(2, "r", 9, 32, 33, outcome::fail);
  // Other resources are independent.
  b.write(0, "s", 1, 40, 41, outcome::ok);
  BOOST_TEST(check_stale_writes(b.ops).empty(), text(check_stale_writes(b.ops)));
}

// ---- (d) bounded ----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(bounded_reports_slow_and_unfinished_operations) {
  builder b;
  op_bounds bounds{100ms, 50ms, 80ms};
  b.failed_acquire(0, "r", 0, 150);  // 150 > 100
  auto a = b.acquire(1, "r", 0, 10, 50);
  b.release(a, 20, 90);              // 70 > 50
  op hang;                           // never completed
  hang.client = 2;
  hang.resource = "r";
  hang.kind = op_kind::write;
  hang.invoke = b.at(5);
  b.push(hang);
  auto v = check_bounded(b.ops, bounds);
  BOOST_TEST(v.size() == 3u, text(v));
}

BOOST_AUTO_TEST_CASE(bounded_passes_prompt_operations) {
  builder b;
  op_bounds bounds{100ms, 50ms, 80ms};
  b.failed_acquire(0, "r", 0, 99);
  auto a = b.acquire(1, "r", 0, 10, 50);
  b.release(a, 20, 60);
  b.write(1, "r", 1, 11, 90, outcome::ok);
  b.fault("sigstop", 0, 5000);  // faults are not operations of the library
  BOOST_TEST(check_bounded(b.ops, bounds).empty(), text(check_bounded(b.ops, bounds)));
}

// ---- (e) recovery -----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(recovery_reports_no_acquisition_after_heal) {
  builder b;
  b.fault("partition", 0, 100);
  b.acquire(0, "r", 50, 120, 300);    // r recovered
  b.failed_acquire(0, "s", 110, 400); // s never acquired again within 500 ms
  b.acquire(0, "s", 700, 800, 900);   // too late
  std::size_t judged = 0;
  auto v = check_recovery(b.ops, {"r", "s"}, 500ms, b.at(5000), &judged);
  BOOST_TEST(judged == 1u);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].message.find("resource s") != std::string::npos, v[0].message);
  // A fault that was never healed is reported too.
  builder u;
  u.fault("sigstop", 0, std::nullopt);
  BOOST_TEST(check_recovery(u.ops, {"r"}, 500ms, u.at(5000)).size() == 1u);
}

BOOST_AUTO_TEST_CASE(recovery_good_history_and_unjudged_periods) {
  builder b;
  b.fault("sigstop", 0, 100);
  b.fault("latency", 50, 200);  // overlapping faults: healed at 200
  b.acquire(0, "r", 150, 250, 300);
  b.acquire(1, "s", 150, 690, 800);
  // Healed at 1100, but the next fault starts 200 ms later: not judged.
  b.fault("reset", 1000, 1100);
  b.fault("reset", 1300, 1400);
  // Healed at 1400, the workload ends at 1600: not judged either.
  std::size_t judged = 0;
  auto v = check_recovery(b.ops, {"r", "s"}, 500ms, b.at(1600), &judged);
  BOOST_TEST(v.empty(), text(v));
  BOOST_TEST(judged == 1u);
}

// ---- (f) residue -------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(residue_reports_leftover_lock_keys) {
  std::vector<key_state> keys{{"m0", "fault:res0", 350}, {"m1", "fault:res1", -1}, {"m1", "{fault:res1}:fence", -1}};
  auto v = check_residue(keys);
  BOOST_TEST_REQUIRE(v.size() == 2u, text(v));
  BOOST_TEST(v[1].message.find("no expiry") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(residue_passes_fence_counters_only) {
  std::vector<key_state> keys{{"m0", "{fault:res0}:fence", -1}, {"m2", "{x}:fence", -1}, {"m1", "gone", -2}};
  BOOST_TEST(check_residue(keys).empty());
  BOOST_TEST(is_permanent_key("{a}:fence"));
  BOOST_TEST(!is_permanent_key("{a}:fence:seen"));
  BOOST_TEST(!is_permanent_key("a:fence"));
}

// ---- all at once ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(check_all_counts_and_classifies) {
  builder b;
  auto a1 = b.acquire(0, "r", 0, 1, 100, 1);
  b.write(0, "r", 1, 2, 3, outcome::ok);
  b.release(a1, 4, 5);
  b.acquire(1, "r", 3, 50, 200, 1);  // overlaps a1? no: a1 released at 4. But token 1 again.
  b.failed_acquire(2, "r", 0, 10);
  check_config c;
  c.resources = {"r"};
  c.workload_end = b.at(1000);
  auto r = check_all(b.ops, c);
  BOOST_TEST(r.acquisitions == 2u);
  BOOST_TEST(r.attempts == 3u);
  BOOST_TEST(r.writes_accepted == 1u);
  BOOST_TEST(r.violations.size() == 1u, text(r.violations));
  BOOST_TEST(r.by_checker["fence-order"] == 1u);
}

// ---- leases -------------------------------------------------------------------

namespace {

// A lease acquired at 10 (valid until 100) whose holder looked at `looks`
// (time, deadline it saw).
std::size_t lease(builder& b, int client, bool renewed, std::vector<std::pair<double, double>> looks) {
  auto id = b.acquire(client, "L", 0, 10, 100);
  b.ops[id].renewed = renewed;
  b.ops[id].ttl = 250ms;  // a lost signal is owed within 25 ms of the deadline
  for (auto [at, deadline] : looks) b.ops[id].beliefs.emplace_back(b.at(at), b.at(deadline));
  b.ops[id].valid_until = belief_end(b.ops[id].beliefs);
  return id;
}

// A probe of acquisition `a` done at `done`, the holder believing `believed`;
// each master: its expiry, or -1 not ours, -2 unreadable.
void probe(builder& b, std::size_t a, double done, double believed, std::vector<double> masters) {
  op p;
  p.client = b.ops[a].client;
  p.resource = b.ops[a].resource;
  p.kind = op_kind::probe;
  p.acquire_op = a;
  p.invoke = b.at(done - 1);
  p.completion = b.at(done);
  p.result = outcome::ok;
  p.valid_until = b.at(believed);
  p.quorum = masters.size() / 2 + 1;
  for (double m : masters) {
    master_view v;
    v.is = m == -1 ? master_view::state::not_ours : m == -2 ? master_view::state::unreadable : master_view::state::ours;
    if (m >= 0) v.expires = b.at(m);
    p.masters.push_back(v);
  }
  b.push(p);
}

}  // namespace

BOOST_AUTO_TEST_CASE(belief_end_follows_renewals_and_stops_at_a_gap) {
  builder b;
  // Renewed before each deadline: the belief reaches the last deadline.
  BOOST_TEST((belief_end({{b.at(10), b.at(100)}, {b.at(90), b.at(190)}, {b.at(180), b.at(280)}}) == b.at(280)));
  // The deadline passed (100) before the holder saw the next one (at 150).
  BOOST_TEST((belief_end({{b.at(10), b.at(100)}, {b.at(150), b.at(300)}}) == b.at(100)));
  // A shorter deadline seen at 50: the belief ends there, at the look (the
  // holder believed 100 until it looked), not before it.
  BOOST_TEST((belief_end({{b.at(10), b.at(100)}, {b.at(50), b.at(40)}}) == b.at(50)));
}

BOOST_AUTO_TEST_CASE(lease_expiry_finds_masters_that_no_longer_back_the_window) {
  builder bad;
  auto a = lease(bad, 0, false, {{10, 100}, {20, 500}});
  probe(bad, a, 30, 500, {120, 130, -2});  // two masters expire at 120 and 130, far before 500
  auto v = check_lease_expiry(bad.ops);
  BOOST_TEST(v.size() == 1u);
  BOOST_TEST((!v.empty() && v[0].checker == "lease-expiry"));

  builder good;
  a = lease(good, 0, false, {{10, 100}, {20, 500}});
  probe(good, a, 30, 500, {501, -1, 600});       // a quorum backs 500
  probe(good, a, 40, 500, {120, -2, 600});       // one unreadable master may back it: undecided
  probe(good, a, 50, 500, {-2, -2, -2});         // none readable: undecided
  probe(good, a, 600, 500, {-1, -1, -1});        // done after the deadline: not judged
  BOOST_TEST(check_lease_expiry(good.ops).empty());
  // Unreadable masters never count as backing: only the first probe decided.
  check_config c;
  c.recovery = false;
  auto r = check_all(good.ops, c);
  BOOST_TEST(r.probes_judged == 1u);
  BOOST_TEST(r.probes_undecided == 2u);
}

// The probe's reading of one master (probe_reading.hpp). The first case is
// the CI failure of kill9_restart_with_aof_fsync_always (seed 42): a master
// restarting from its AOF answered the owner read with -LOADING and the PTTL
// right after with the key's real TTL; the probe called that "not ours" and
// the lease-expiry checker reported a violation that never happened.
BOOST_AUTO_TEST_CASE(probe_reads_an_error_as_unreadable_and_only_answers_as_not_ours) {
  using t = probe_reply::type;
  auto reply = [](t is, std::string text = {}, long long n = 0) { return probe_reply{is, std::move(text), n}; };
  auto loading = reply(t::error, "LOADING Redis is loading the dataset in memory");
  auto ttl = [&](long long ms) { return reply(t::integer, {}, ms); };
  const std::string token = "tok";
  const time_point now = steady::now();
  auto judge = [&](const probe_reply& owner, const probe_reply& pttl, bool hash, double rate = 1.0) {
    return judge_master_reading(owner, pttl, token, hash, now, rate);
  };
  using s = master_view::state;
  // Errors and missing replies say nothing about the key.
  BOOST_TEST((judge(loading, ttl(5000), false).is == s::unreadable));
  BOOST_TEST((judge(loading, ttl(5000), true).is == s::unreadable));
  BOOST_TEST((judge(reply(t::string, token), loading, false).is == s::unreadable));
  BOOST_TEST((judge(reply(t::string, token), reply(t::none), false).is == s::unreadable));
  BOOST_TEST((judge(reply(t::none), reply(t::none), true).is == s::unreadable));
  // Answers that the key is not ours: gone, another owner, another kind.
  BOOST_TEST((judge(reply(t::nil), ttl(-2), false).is == s::not_ours));
  BOOST_TEST((judge(loading, ttl(-2), false).is == s::not_ours));  // the PTTL alone says it is gone
  BOOST_TEST((judge(reply(t::string, "someone-else"), ttl(300), false).is == s::not_ours));
  BOOST_TEST((judge(ttl(0), ttl(300), true).is == s::not_ours));
  BOOST_TEST((judge(reply(t::error, "WRONGTYPE Operation against a key holding the wrong kind of value"), ttl(300),
                    true)
                  .is == s::not_ours));
  // Ours: until the reply time plus the PTTL in the master's time.
  auto mine = judge(reply(t::string, token), ttl(300), false);
  BOOST_TEST((mine.is == s::ours && mine.expires == now + 300ms));
  auto fast_master = judge(ttl(1), ttl(300), true, 2.0);  // its 300 ms pass in 150 of ours
  BOOST_TEST((fast_master.is == s::ours && fast_master.expires == now + 150ms));
  auto forever = judge(ttl(1), ttl(-1), true);
  BOOST_TEST((forever.is == s::ours && forever.expires == time_point::max()));
}

BOOST_AUTO_TEST_CASE(lost_signal_must_come_when_a_renewed_window_runs_out) {
  auto lost = [](builder& b, std::size_t a, double at) {
    op x;
    x.client = b.ops[a].client;
    x.resource = "L";
    x.kind = op_kind::lost;
    x.acquire_op = a;
    x.invoke = b.at(at);
    x.completion = b.at(at);
    x.result = outcome::ok;
    b.push(x);
  };
  builder silent, late, in_time, not_renewed;
  lease(silent, 0, true, {{10, 100}, {105, 100}});  // saw it run out; no signal at all
  auto a = lease(late, 0, true, {{10, 100}, {105, 100}});
  lost(late, a, 400);  // 300 ms after the deadline
  a = lease(in_time, 0, true, {{10, 100}, {105, 100}});
  lost(in_time, a, 120);
  lease(not_renewed, 0, false, {{10, 100}, {105, 100}});  // an extended lease owes no signal
  BOOST_TEST(check_lost_signal(silent.ops, 0.1).size() == 1u);
  BOOST_TEST(check_lost_signal(late.ops, 0.1).size() == 1u);
  BOOST_TEST(check_lost_signal(in_time.ops, 0.1).empty());
  BOOST_TEST(check_lost_signal(not_renewed.ops, 0.1).empty());
  // The slack is a tenth of the TTL: 30 ms after the deadline is late for
  // a 250 ms lease, in time for a 400 ms one.
  builder tight;
  a = lease(tight, 0, true, {{10, 100}, {105, 100}});
  lost(tight, a, 130);
  BOOST_TEST(check_lost_signal(tight.ops, 0.1).size() == 1u);
  tight.ops[a].ttl = 400ms;
  BOOST_TEST(check_lost_signal(tight.ops, 0.1).empty());
}

// (l) A window that ended and came back between two looks (the bug class
// nemesis seed 1 found: the lease revived by a renewal decided after its
// deadline) is reported; a deadline moved by a renewal that completed
// before the old deadline, and only seen late, is not.
BOOST_AUTO_TEST_CASE(revival_of_an_ended_window_is_reported) {
  builder bad;
  auto a = lease(bad, 0, true, {{10, 100}, {90, 100}, {150, 300}});
  auto v = check_revival(bad.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].checker == "revived");
  BOOST_TEST(check_exclusion(bad.ops).empty(), "(a) alone does not see it: the window ends at the gap");
  BOOST_TEST(is_safety_checker("revived"));
  // A renewal that completed at 95 moved the deadline; the look at 150 only saw it late.
  builder good = bad;
  op r;
  r.client = 0;
  r.resource = "L";
  r.kind = op_kind::renewal;
  r.invoke = good.at(95);
  r.completion = good.at(95);
  r.result = outcome::ok;
  good.push(r);
  BOOST_TEST(check_revival(good.ops).empty(), text(check_revival(good.ops)));
  // A fair hand-over's confirmation is seen only as a window move (an
  // extend span): one at 95 accounts for the new deadline as well; at 120
  // it does not.
  good.ops.back().kind = op_kind::window_moved;
  BOOST_TEST(check_revival(good.ops).empty(), text(check_revival(good.ops)));
  good.ops.back().invoke = good.ops.back().completion.value() = good.at(120);
  BOOST_TEST(check_revival(good.ops).size() == 1u);
  good.ops.back().kind = op_kind::renewal;
  // The same renewal completing after the deadline revived it.
  BOOST_TEST(check_revival(good.ops).size() == 1u);
  // Renewed in time and seen in time: nothing to report.
  builder steady_renewals;
  lease(steady_renewals, 0, true, {{10, 100}, {90, 190}, {180, 280}});
  BOOST_TEST(check_revival(steady_renewals.ops).empty());
  (void)a;
}

// (m) A set judged on the names asked for: a name the lock does not hold,
// or holds without a token, is reported.
BOOST_AUTO_TEST_CASE(names_asked_for_but_not_held_are_reported) {
  builder b;
  auto s = b.set(0, {"a", "b", "c"}, 10, 100, {1, 1, 1});
  BOOST_TEST(check_names(b.ops).empty());
  b.ops[s].names_unheld = {"c (no token)"};
  auto v = check_names(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].checker == "names");
  BOOST_TEST(is_safety_checker("names"));
}

BOOST_AUTO_TEST_CASE(release_after_takeover_is_found) {
  builder bad;
  auto a = bad.acquire(0, "R", 0, 10, 100);
  bad.acquire(1, "R", 110, 120, 300);  // c0's window ended at 100; c1 holds from 120
  auto r = bad.release(a, 150, 155);   // c0's late release "succeeded" over c1's hold
  BOOST_TEST(check_release_after_takeover(bad.ops).size() == 1u);
  bad.ops[r].result = outcome::fail;   // the same release refused: fine
  BOOST_TEST(check_release_after_takeover(bad.ops).empty());

  builder good;
  a = good.acquire(0, "R", 0, 10, 100);
  good.release(a, 50, 55);
  good.acquire(1, "R", 56, 60, 300);
  BOOST_TEST(check_release_after_takeover(good.ops).empty());
}

// ---- semaphores: (j) permits, and each slot as a lock of its own ----------------

BOOST_AUTO_TEST_CASE(permits_reports_one_holder_too_many) {
  builder b;
  auto a1 = b.permit(0, "sem", 2, 0, 0, 100);
  auto a2 = b.permit(1, "sem", 2, 1, 10, 200);
  b.release(a1, 50, 51);                        // c0's window ends at 50
  auto a3 = b.permit(2, "sem", 2, 0, 40, 300);  // begins while c0 and c1 hold: a third holder
  auto v = check_permits(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].checker == "permits");
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{a1, a2, a3}));
  BOOST_TEST(v[0].message.find("3 holders at once") != std::string::npos, v[0].message);
  BOOST_TEST(v[0].message.find("overlap for 10.000 ms") != std::string::npos, v[0].message);
  BOOST_TEST(is_safety_checker("permits"));
  // check_all runs it.
  check_config c;
  c.recovery = false;
  BOOST_TEST(check_all(b.ops, c).by_checker["permits"] == 1u);
}

BOOST_AUTO_TEST_CASE(permits_counts_holders_without_slots) {
  // A semaphore built from per-master counters has no slots: (j) alone judges it.
  builder b;
  for (int k = 0; k < 4; ++k) b.permit(k, "counted", 3, std::nullopt, 10 + k, 500);
  auto v = check_permits(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].ops.size() == 4u);
  BOOST_TEST(check_exclusion(b.ops).empty(), "holders without a slot exclude nobody");
  BOOST_TEST(check_fence_order(b.ops).empty());
}

BOOST_AUTO_TEST_CASE(permits_passes_at_most_n_holders) {
  builder b;
  auto a1 = b.permit(0, "sem", 2, 0, 0, 100);
  b.permit(1, "sem", 2, 1, 10, 200);
  b.release(a1, 50, 51);
  b.permit(2, "sem", 2, 0, 60, 300);  // c0 released at 50: back to two
  b.permit(3, "sem", 2, 1, 201, 300); // c1's deadline was 200
  b.permit(0, "other", 2, 0, 70, 300); // another semaphore counts on its own
  b.permit(1, "other", 2, 1, 70, 300);
  b.acquire(2, "mutex", 0, 70, 300);   // and a lock is no semaphore
  b.acquire(2, "sem", 0, 70, 300);     // (even one of the same name)
  BOOST_TEST(check_permits(b.ops).empty(), text(check_permits(b.ops)));
}

BOOST_AUTO_TEST_CASE(slot_exclusion_reports_two_holders_of_one_slot) {
  builder b;
  auto a1 = b.permit(0, "sem", 3, 1, 0, 100);
  auto a2 = b.permit(1, "sem", 3, 1, 60, 200);  // slot 1 again, inside c0's window; 2 of 3 permits
  BOOST_TEST(check_permits(b.ops).empty(), "two holders of three permits are allowed");
  auto v = check_exclusion(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{a1, a2}));
  BOOST_TEST(v[0].message.find("sem:permit:1") != std::string::npos, v[0].message);
  // A release judged for slot 1 (check (i)): c0 releases after c1 took the slot.
  b.release(a1, 150, 151);
  BOOST_TEST(check_release_after_takeover(b.ops).size() == 1u);
}

BOOST_AUTO_TEST_CASE(slot_exclusion_passes_different_slots) {
  builder b;
  auto a1 = b.permit(0, "sem", 3, 0, 0, 100);
  b.permit(1, "sem", 3, 1, 10, 200);
  b.permit(2, "sem", 3, 2, 20, 200);
  b.release(a1, 50, 51);
  b.permit(3, "sem", 3, 0, 52, 300);  // slot 0 after c0 released it
  BOOST_TEST(check_exclusion(b.ops).empty(), text(check_exclusion(b.ops)));
  BOOST_TEST(check_release_after_takeover(b.ops).empty(), "a release of slot 0 while others hold other slots");
  BOOST_TEST(check_permits(b.ops).empty());
}

BOOST_AUTO_TEST_CASE(slot_fence_order_reports_a_token_that_went_backwards_in_a_slot) {
  builder b;
  auto a1 = b.permit(0, "sem", 2, 0, 0, 50, 7);
  b.permit(1, "sem", 2, 1, 10, 60, 2);          // slot 1 has its own counter: lower is fine
  auto a3 = b.permit(2, "sem", 2, 0, 70, 120, 7);  // slot 0 again with the same token
  auto v = check_fence_order(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{a1, a3}));
  BOOST_TEST(v[0].message.find("sem:permit:0") != std::string::npos, v[0].message);
}

BOOST_AUTO_TEST_CASE(slot_fence_order_passes_increasing_tokens_per_slot) {
  builder b;
  b.permit(0, "sem", 2, 0, 0, 50, 3);
  b.permit(1, "sem", 2, 1, 10, 60, 1);
  b.permit(2, "sem", 2, 0, 70, 120, 4);
  b.permit(3, "sem", 2, 1, 80, 120, 2);
  BOOST_TEST(check_fence_order(b.ops).empty(), text(check_fence_order(b.ops)));
}

// ---- read-write locks: (a) with shared reads, (b) on writers ------------------

BOOST_AUTO_TEST_CASE(read_write_exclusion_reports_a_write_overlapping_a_read) {
  builder b;
  auto r1 = b.rw(0, "rw", true, 0, 100);
  b.rw(1, "rw", true, 10, 150);               // two readers at once: fine
  auto w1 = b.rw(2, "rw", false, 120, 300);   // a writer while c1 still reads
  auto v = check_exclusion(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].ops.back() == w1);
  BOOST_TEST(v[0].message.find("(read)") != std::string::npos, v[0].message);
  // A reader inside a writer's window is reported too.
  builder c;
  auto w2 = c.rw(0, "rw", false, 0, 100);
  auto r2 = c.rw(1, "rw", true, 50, 200);
  auto v2 = check_exclusion(c.ops);
  BOOST_TEST_REQUIRE(v2.size() == 1u, text(v2));
  BOOST_TEST((v2[0].ops == std::vector<std::size_t>{w2, r2}));
  // Two writers overlapping: reported as for a mutex.
  builder d;
  d.rw(0, "rw", false, 0, 100);
  d.rw(1, "rw", false, 99, 200);
  BOOST_TEST(check_exclusion(d.ops).size() == 1u);
  (void)r1;
}

BOOST_AUTO_TEST_CASE(read_write_exclusion_passes_shared_reads_between_writes) {
  builder b;
  auto w1 = b.rw(0, "rw", false, 0, 100);
  b.release(w1, 40, 41);
  b.rw(1, "rw", true, 42, 200);
  b.rw(2, "rw", true, 43, 150);
  b.rw(3, "rw", true, 100, 210);  // a third reader joins the two
  b.rw(4, "rw", false, 211, 300);  // the writer after every read window
  b.rw(0, "other", false, 50, 300);  // another name
  BOOST_TEST(check_exclusion(b.ops).empty(), text(check_exclusion(b.ops)));
  check_config cc;
  cc.recovery = false;
  BOOST_TEST(check_all(b.ops, cc).reads_shared == 2u);  // c2 and c3 began inside c1's read
  // A release of a read while other readers took the name after it began: fine.
  b.release(2, 120, 121);
  BOOST_TEST(check_release_after_takeover(b.ops).empty(), text(check_release_after_takeover(b.ops)));
}

BOOST_AUTO_TEST_CASE(read_write_fence_order_reports_a_writer_token_that_went_backwards) {
  builder b;
  auto w1 = b.rw(0, "rw", false, 0, 50, 10);
  b.rw(1, "rw", true, 60, 100, 11);
  b.rw(2, "rw", true, 61, 100, 3);  // readers' tokens are not ordered
  auto w2 = b.rw(3, "rw", false, 110, 150, 9);  // a writer below an earlier writer
  auto v = check_fence_order(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{w1, w2}));
  // With the writer's token above every earlier writer's: no violation.
  b.ops[w2].fence = 12;
  BOOST_TEST(check_fence_order(b.ops).empty(), text(check_fence_order(b.ops)));
}

// ---- names held together: every name a lock of its own ---------------------

BOOST_AUTO_TEST_CASE(together_exclusion_reports_overlapping_sets_on_their_common_name) {
  builder b;
  auto s1 = b.set(0, {"a", "b"}, 0, 100, {5, 7});
  auto s2 = b.set(1, {"b", "c"}, 50, 200, {8, 2});  // b held by both sets at 50..100
  b.set(2, {"d", "e"}, 50, 200, {1, 1});            // disjoint: fine
  auto v = check_exclusion(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{s1, s2}));
  BOOST_TEST(v[0].message.find("resource b:") != std::string::npos, v[0].message);
  // A single-name holder of a name inside a set's window is reported too.
  builder c;
  c.set(0, {"a", "b", "c"}, 0, 100);
  c.acquire(1, "c", 10, 20, 80);
  BOOST_TEST(check_exclusion(c.ops).size() == 1u, text(check_exclusion(c.ops)));
  // Its release after the set on c took over is judged on every name.
  builder d;
  auto one = d.acquire(1, "c", 0, 1, 50);
  d.set(0, {"a", "c"}, 60, 200);
  d.release(one, 70, 71);
  auto vi = check_release_after_takeover(d.ops);
  BOOST_TEST(vi.size() == 1u, text(vi));
}

BOOST_AUTO_TEST_CASE(together_fence_order_is_per_name) {
  builder b;
  auto s1 = b.set(0, {"a", "b"}, 0, 50, {5, 7});
  b.set(1, {"b", "c"}, 60, 100, {8, 2});           // c's own counter: 2 is fine
  auto s3 = b.set(2, {"a", "c"}, 110, 150, {5, 3});  // a: 5 again, after 5
  auto v = check_fence_order(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{s1, s3}));
  BOOST_TEST(v[0].message.find("resource a:") != std::string::npos, v[0].message);
  b.ops[s3].fences = {6, 3};
  BOOST_TEST(check_fence_order(b.ops).empty(), text(check_fence_order(b.ops)));
  BOOST_TEST(check_exclusion(b.ops).empty(), text(check_exclusion(b.ops)));
  // Recovery counts an acquisition for every name of the set.
  std::size_t periods = 0;
  b.fault("latency", 0, 1);
  auto rec = check_recovery(b.ops, {"a", "b", "c"}, 200ms, b.at(1000), &periods);
  BOOST_TEST(periods == 1u);
  BOOST_TEST(rec.empty(), text(rec));
}

// ---- leader election: (a) between leaders, (k) epochs -----------------------

BOOST_AUTO_TEST_CASE(epochs_report_a_leader_whose_epoch_did_not_increase) {
  builder b;
  b.leader(0, "elect", 0, 100, 3);
  auto l2 = b.leader(1, "elect", 110, 200, 7);
  auto l3 = b.leader(2, "elect", 210, 300, 7);  // the same epoch as the leader before
  b.leader(0, "other", 120, 300, 1);            // another election has its own epochs
  auto v = check_epochs(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].checker == "epoch");
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{l2, l3}));
  BOOST_TEST(check_fence_order(b.ops).empty(), "leaders are judged by (k), not twice");
  BOOST_TEST(check_exclusion(b.ops).empty());
  check_config c;
  c.recovery = false;
  BOOST_TEST(check_all(b.ops, c).by_checker["epoch"] == 1u);
  BOOST_TEST(is_safety_checker("epoch"));
  b.ops[l3].fence = 8;
  BOOST_TEST(check_epochs(b.ops).empty(), text(check_epochs(b.ops)));
}

BOOST_AUTO_TEST_CASE(two_leaders_at_once_are_reported) {
  builder b;
  auto l1 = b.leader(0, "elect", 0, 100, 3);
  auto l2 = b.leader(1, "elect", 90, 200, 4);  // epochs fine, windows overlap
  BOOST_TEST(check_epochs(b.ops).empty());
  auto v = check_exclusion(b.ops);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{l1, l2}));
  BOOST_TEST(v[0].message.find("(leader)") != std::string::npos, v[0].message);
  // A resignation (the release) ends the term: the next leader may follow.
  builder c;
  auto m1 = c.leader(0, "elect", 0, 100, 3);
  c.release(m1, 60, 61);
  c.leader(1, "elect", 62, 200, 4);
  BOOST_TEST(check_exclusion(c.ops).empty(), text(check_exclusion(c.ops)));
}

// ---- the data-level verdict: from the storage alone (register_check.hpp) -------------

namespace {

// A storage log being written: entries at storage times in ms.
struct storage_log {
  std::vector<std::string> entries;
  storage_log& at(double ms, char kind, const std::string& sid, const std::string& name = "R", unsigned cap = 1) {
    auto us = static_cast<std::int64_t>(ms * 1000) + 1'700'000'000'000'000;
    entries.push_back(std::string(1, kind) + " " + sid + " " + name + " " + std::to_string(cap) + " " +
                      std::to_string(us / 1000000) + " " + std::to_string(us % 1000000));
    return *this;
  }
};

std::vector<violation> data(const storage_log& log, long long counter, data_figures* f = nullptr,
                            const std::string& name = "R") {
  return check_data({{"log:" + name, log.entries}}, {{"reg:" + name, counter}}, f);
}

std::size_t count(const std::vector<violation>& v, const std::string& checker) {
  return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [&](auto& x) { return x.checker == checker; }));
}

}  // namespace

BOOST_AUTO_TEST_CASE(data_register_entries_parse) {
  auto e = parse_register_entry("B c1#42 s1:res0 1 1700000000 123456");
  BOOST_TEST_REQUIRE(e.has_value());
  BOOST_TEST(e->kind == 'B');
  BOOST_TEST(e->sid == "c1#42");
  BOOST_TEST(e->at_us == 1700000000123456);
  BOOST_TEST((section_acquire_op(e->sid) == std::optional<std::size_t>(42)));
  BOOST_TEST(!parse_register_entry("X c1#42 r 1 1 1").has_value());
  BOOST_TEST(!parse_register_entry("B c1#42 r").has_value());
}

// Sections one after the other: every write-back counted, nothing lost.
BOOST_AUTO_TEST_CASE(data_register_passes_sections_in_turn) {
  storage_log log;
  log.at(0, 'B', "c0#1").at(10, 'E', "c0#1").at(11, 'B', "c1#2").at(300, 'E', "c1#2").at(301, 'B', "c0#3")
      .at(302, 'A', "c0#3")      // abandoned: nothing written
      .at(310, 'B', "c1#4").at(320, 'L', "c1#4");  // too late: nothing written
  data_figures f;
  auto v = data(log, 2, &f);
  BOOST_TEST(v.empty(), text(v));
  BOOST_TEST(f.sections == 2u);
  BOOST_TEST(f.writes == 2u);
  BOOST_TEST(f.abandoned == 1u);
  BOOST_TEST(f.late == 1u);
  BOOST_TEST(f.overlaps == 0u);
}

// Two holders at once (Jepsen's lock + register): B began inside A, A wrote
// back last, so B's update is lost; both are found, with the exposure.
BOOST_AUTO_TEST_CASE(data_register_reports_interleaved_sections_and_the_lost_update) {
  storage_log log;
  log.at(0, 'B', "c0#1").at(40, 'B', "c1#2").at(60, 'E', "c1#2").at(100, 'E', "c0#1");
  data_figures f;
  auto v = data(log, 1, &f);  // both read 0 and wrote 1
  BOOST_TEST(count(v, "data-interleave") == 1u, text(v));
  BOOST_TEST(count(v, "data-lost-update") == 1u, text(v));
  BOOST_TEST(f.lost_updates == 1u);
  BOOST_TEST(f.overlaps == 1u);
  BOOST_TEST(f.exposure_ms == 20.0);  // B's section, 40 .. 60, inside A's
  auto i = std::find_if(v.begin(), v.end(), [](auto& x) { return x.checker == "data-interleave"; });
  BOOST_TEST((i->ops == std::vector<std::size_t>{1, 2}));
  BOOST_TEST(is_safety_checker("data-interleave"));
  BOOST_TEST(is_safety_checker("data-lost-update"));
}

// The counter alone catches a lost update even where the log would not
// (a log entry dropped: here, the begin of c1's section is missing).
BOOST_AUTO_TEST_CASE(data_register_counter_below_the_write_backs_is_a_lost_update) {
  storage_log log;
  log.at(0, 'B', "c0#1").at(10, 'E', "c0#1").at(20, 'B', "c1#2").at(30, 'E', "c1#2");
  auto v = data(log, 1);
  BOOST_TEST(count(v, "data-lost-update") == 1u, text(v));
  BOOST_TEST(count(v, "data-corrupt") == 0u, text(v));
  BOOST_TEST(count(data(log, 3), "data-corrupt") == 1u);  // above: written by no logged section
  storage_log broken;
  broken.at(0, 'E', "c0#1");
  BOOST_TEST(count(data(broken, 0), "data-corrupt") == 1u);  // an end without its begin
}

// Overlaps with a section that ended past its deadline or was abandoned are
// not judged (that holder's window may have ended before the other began).
BOOST_AUTO_TEST_CASE(data_register_does_not_judge_overlaps_with_sections_that_ended_late) {
  storage_log log;
  log.at(0, 'B', "c0#1").at(40, 'B', "c1#2").at(60, 'E', "c1#2").at(100, 'L', "c0#1");
  data_figures f;
  auto v = data(log, 1, &f);
  BOOST_TEST(v.empty(), text(v));
  BOOST_TEST(f.unjudged_overlaps == 1u);
}

// Readers share; a writer inside a read, or a read inside a write, is two
// holders at once.
BOOST_AUTO_TEST_CASE(data_register_lets_reads_share_and_reports_a_write_inside_a_read) {
  storage_log good;
  good.at(0, 'R', "c0#1").at(5, 'R', "c1#2").at(10, 'Q', "c0#1").at(20, 'Q', "c1#2").at(21, 'B', "c2#3")
      .at(30, 'E', "c2#3");
  data_figures f;
  auto v = data(good, 1, &f);
  BOOST_TEST(v.empty(), text(v));
  BOOST_TEST(f.reads_shared == 1u);
  BOOST_TEST(f.reads == 2u);
  storage_log bad;
  bad.at(0, 'R', "c0#1").at(5, 'B', "c1#2").at(10, 'E', "c1#2").at(20, 'Q', "c0#1");
  BOOST_TEST(count(data(bad, 1), "data-interleave") == 1u, text(data(bad, 1)));
  storage_log bad2;
  bad2.at(0, 'B', "c1#2").at(5, 'R', "c0#1").at(10, 'Q', "c0#1").at(20, 'E', "c1#2");
  BOOST_TEST(count(data(bad2, 1), "data-interleave") == 1u, text(data(bad2, 1)));
}

// A semaphore's log holds every slot: at most `cap` sections open at once,
// and never two on one slot.
BOOST_AUTO_TEST_CASE(data_register_reports_one_permit_holder_too_many) {
  storage_log log;
  log.at(0, 'B', "c0#1", "S:permit:0", 2).at(1, 'B', "c1#2", "S:permit:1", 2).at(2, 'B', "c2#3", "S:permit:0", 2);
  log.at(10, 'E', "c0#1", "S:permit:0", 2).at(11, 'E', "c1#2", "S:permit:1", 2).at(12, 'E', "c2#3", "S:permit:0", 2);
  data_figures f;
  auto v = check_data({{"log:S", log.entries}}, {{"reg:S:permit:0", 1}, {"reg:S:permit:1", 1}}, &f);
  BOOST_TEST(count(v, "data-permits") == 1u, text(v));
  BOOST_TEST(count(v, "data-interleave") == 1u, text(v));  // c2 on c0's slot
  BOOST_TEST(count(v, "data-lost-update") == 1u, text(v));
  BOOST_TEST(f.full == 1u);  // c1 began with the other permit in use
  storage_log good;
  good.at(0, 'B', "c0#1", "S:permit:0", 2).at(1, 'B', "c1#2", "S:permit:1", 2).at(10, 'E', "c0#1", "S:permit:0", 2)
      .at(11, 'B', "c2#3", "S:permit:0", 2).at(12, 'E', "c1#2", "S:permit:1", 2).at(13, 'E', "c2#3", "S:permit:0", 2);
  auto w = check_data({{"log:S", good.entries}}, {{"reg:S:permit:0", 2}, {"reg:S:permit:1", 1}});
  BOOST_TEST(w.empty(), text(w));
}

// ---- a storage that fences itself: its table (check_fenced_data) ---------------------

// Writes committed in token order (an equal token may write again), a stale
// write refused and absent, an unknown outcome either way: clean.
BOOST_AUTO_TEST_CASE(fenced_data_passes_writes_in_token_order) {
  fenced_table t;
  t.writes["R"] = {{"c0#1", 3}, {"c1#2", 5}, {"c0#3", 7}};
  t.counters["R"] = 3;
  std::vector<fenced_outcome> told{{"R", "c0#1", 3, outcome::ok},
                                   {"R", "c1#2", 5, outcome::unknown},  // committed, the client never heard
                                   {"R", "c0#3", 7, outcome::ok},
                                   {"R", "c2#4", 4, outcome::fail},      // paused, refused after 5 fenced
                                   {"R", "c2#5", 6, outcome::unknown}};  // never got there
  data_figures f;
  auto v = check_fenced_data(t, told, &f);
  BOOST_TEST(v.empty(), text(v));
  BOOST_TEST(f.sections == 3u);
  BOOST_TEST(f.refused == 1u);
  BOOST_TEST(f.unfinished == 2u);
}

// The fence off: a paused holder's write (token 3) committed after token 5.
BOOST_AUTO_TEST_CASE(fenced_data_reports_a_stale_write_committed) {
  fenced_table t;
  t.writes["R"] = {{"c0#1", 2}, {"c1#2", 5}, {"c0#3", 3}, {"c1#4", 6}};
  t.counters["R"] = 4;
  auto v = check_fenced_data(t, {});
  BOOST_TEST_REQUIRE(count(v, "data-stale-write") == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{2, 3}));
  BOOST_TEST(v[0].message.find("token 3 after section c1#2 had committed token 5") != std::string::npos, v[0].message);
  BOOST_TEST(is_safety_checker("data-stale-write"));
}

// Two increments that read the same value: the counter is one short.
BOOST_AUTO_TEST_CASE(fenced_data_reports_a_lost_update) {
  fenced_table t;
  t.writes["R"] = {{"c0#1", 2}, {"c1#2", 5}, {"c0#3", 6}};
  t.counters["R"] = 2;
  data_figures f;
  auto v = check_fenced_data(t, {}, &f);
  BOOST_TEST(count(v, "data-lost-update") == 1u, text(v));
  BOOST_TEST(f.lost_updates == 1u);
  t.counters["R"] = 4;  // above its committed writes
  BOOST_TEST(count(check_fenced_data(t, {}), "data-corrupt") == 1u);
}

// What the clients were told must match the table: a refused write left
// nothing, a committed one is there.
BOOST_AUTO_TEST_CASE(fenced_data_reports_a_refused_write_kept_and_a_commit_lost) {
  fenced_table t;
  t.writes["R"] = {{"c0#1", 2}, {"c1#2", 5}};
  t.counters["R"] = 2;
  data_figures f;
  auto v = check_fenced_data(t, {{"R", "c1#2", 5, outcome::fail}, {"R", "c2#9", 6, outcome::ok}}, &f);
  BOOST_TEST(count(v, "data-refused-kept") == 1u, text(v));
  BOOST_TEST(count(v, "data-lost-commit") == 1u, text(v));
  BOOST_TEST(f.refused == 0u);
  BOOST_TEST(is_safety_checker("data-refused-kept"));
  BOOST_TEST(is_safety_checker("data-lost-commit"));
}

// (n) Fair locks: no overtaking once queued. c1 asked after c0, was granted
// while c0 (in line by then) still waited, and c0 won later: reported. In
// order, or while a fault cut off a majority of masters (c0's place in line
// may have lapsed), it is not.
BOOST_AUTO_TEST_CASE(fifo_reports_a_fair_waiter_overtaken_once_queued) {
  auto fair = [](builder& b, int client, double invoke, double done) {
    auto id = b.acquire(client, "F", invoke, done, done + 300);
    b.ops[id].fair = true;
    return id;
  };
  builder bad;
  auto a = fair(bad, 0, 0, 500);
  auto o = fair(bad, 1, 10, 300);  // asked later, granted first
  std::size_t judged = 0;
  auto v = check_fifo(bad.ops, 3, 200ms, 0ms, &judged);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].checker == "fifo");
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{a, o}));
  BOOST_TEST(judged == 1u);

  builder in_order;
  fair(in_order, 0, 0, 300);
  fair(in_order, 1, 10, 500);
  BOOST_TEST(check_fifo(in_order.ops, 3, 200ms, 0ms, &judged).empty());
  BOOST_TEST(judged == 1u);

  builder too_soon = bad;  // granted before c0's first poll could have landed
  too_soon.ops[o].completion = too_soon.at(150);
  BOOST_TEST(check_fifo(too_soon.ops, 3, 200ms, 0ms).empty());

  builder majority_cut = bad;
  auto f = majority_cut.fault("partition", 50, 250);
  majority_cut.ops[f].fault_masters = {0, 1};
  BOOST_TEST(check_fifo(majority_cut.ops, 3, 200ms, 0ms, &judged).empty());
  BOOST_TEST(judged == 0u);
  majority_cut.ops[f].fault_masters = {2};  // a minority: c0 stays in line on a quorum
  BOOST_TEST(check_fifo(majority_cut.ops, 3, 200ms, 0ms).size() == 1u);
  BOOST_TEST(!is_safety_checker("fifo"));

  // A fault on a majority that ended just before c0 asked: a link it left
  // silent is noticed only a stall timeout later (the nemesis's seed 3: a
  // reset on two masters, a proxy down on a third, 215 ms before the
  // waiter asked, its link given up 430 ms after the fault ended). Within
  // `aftermath` of the fault the pair is not judged; after it, it is.
  builder after_fault;
  auto late_a = fair(after_fault, 0, 1000, 1500);
  auto late_o = fair(after_fault, 1, 1010, 1300);
  auto cut = after_fault.fault("reset", 100, 900);
  after_fault.ops[cut].fault_masters = {0, 1};
  BOOST_TEST(check_fifo(after_fault.ops, 3, 200ms, 0ms).size() == 1u);  // the rule before the aftermath
  BOOST_TEST(check_fifo(after_fault.ops, 3, 200ms, 700ms, &judged).empty());
  BOOST_TEST(judged == 0u);
  after_fault.ops[cut].completion = after_fault.at(250);  // ended 750 ms before c0 asked
  v = check_fifo(after_fault.ops, 3, 200ms, 700ms, &judged);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST((v[0].ops == std::vector<std::size_t>{late_a, late_o}));
  BOOST_TEST(judged == 1u);
}

// (o) Wake-up latency: released with another client waiting, the lock must
// be taken again within the bound; not judged while a fault is active.
BOOST_AUTO_TEST_CASE(wakeup_reports_a_free_lock_not_taken_by_its_waiter) {
  builder slow;
  auto held = slow.acquire(0, "W", 0, 1, 1000);
  slow.release(held, 100, 101);                  // free at 101
  auto waiter = slow.acquire(1, "W", 50, 400, 1400);  // waiting since 50, got it only at 400
  std::size_t judged = 0;
  auto v = check_wakeup(slow.ops, 250ms, 100ms, 0ms, &judged);
  BOOST_TEST_REQUIRE(v.size() == 1u, text(v));
  BOOST_TEST(v[0].checker == "wake-up");
  BOOST_TEST(judged == 1u);
  BOOST_TEST(!is_safety_checker("wake-up"));

  builder prompt = slow;
  prompt.ops[waiter].completion = prompt.at(150);  // taken 49 ms after the release
  BOOST_TEST(check_wakeup(prompt.ops, 250ms, 100ms, 0ms).empty());

  builder faulted = slow;
  faulted.fault("sigstop", 90, 300);  // a fault active: no bound to hold
  BOOST_TEST(check_wakeup(faulted.ops, 250ms, 100ms, 0ms, &judged).empty());
  BOOST_TEST(judged == 0u);
}
