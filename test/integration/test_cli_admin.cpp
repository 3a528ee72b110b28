// SPDX-License-Identifier: Apache-2.0
// The operator's subcommands: `redlock list` and `redlock release --force`.
#define BOOST_TEST_MODULE integration_cli_admin
#include <boost/test/unit_test.hpp>

#include "cli_runner.hpp"
#include "masters.hpp"

#include <redlock/redlock.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <functional>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

using namespace std::chrono_literals;
using redlock::testing::cli;
using redlock::testing::masters;
using redlock::testing::nodes_of;
namespace json = boost::json;

namespace {

// The CLI with a node timeout that a loaded, sanitized machine keeps (its
// default, 50 ms, is for production masters).
redlock::testing::result admin(const std::string& nodes, const std::string& args) {
  return cli(nodes, args + " --node-timeout 2s");
}

redlock::acquire_options opts(redlock::lock_kind kind, std::string owner = {}, unsigned permits = 0) {
  redlock::acquire_options o;
  o.ttl = 30s;
  o.fenced = true;
  o.kind = kind;
  o.owner = std::move(owner);
  o.permits = permits;
  return o;
}

// `redlock list --json`'s rows by name.
std::map<std::string, json::object> listed(const std::string& nodes, const std::string& args = "") {
  auto r = admin(nodes, "list --json " + args);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  std::map<std::string, json::object> rows;
  auto doc = json::parse(r.out);  // (kept: the loop runs over a part of it)
  for (auto& row : doc.as_object().at("locks").as_array())
    rows[std::string(row.as_object().at("name").as_string())] = row.as_object();
  return rows;
}

std::vector<std::string> tokens_of(const json::object& row) {
  std::vector<std::string> out;
  for (auto& h : row.at("holders").as_array()) out.emplace_back(h.as_object().at("token").as_string());
  std::sort(out.begin(), out.end());
  return out;
}

const json::object& holder_of(const json::object& row, std::size_t i = 0) {
  return row.at("holders").as_array().at(i).as_object();
}

// Every hold `redlock release --force --json` says it removed, per master.
std::vector<std::vector<std::string>> removed_tokens(const std::string& out) {
  std::vector<std::vector<std::string>> per_master;
  auto doc = json::parse(out);
  for (auto& name : doc.as_object().at("released").as_array())
    for (auto& node : name.as_object().at("nodes").as_array()) {
      std::vector<std::string> tokens;
      for (auto& h : node.as_object().at("removed").as_array()) tokens.emplace_back(h.as_object().at("token").as_string());
      std::sort(tokens.begin(), tokens.end());
      per_master.push_back(std::move(tokens));
    }
  return per_master;
}

}  // namespace

BOOST_AUTO_TEST_CASE(list_shows_each_kind_with_its_holders_ttl_and_masters) {
  masters m(3);
  auto nodes = nodes_of(m);
  redlock::client c(m.options(1000ms));
  using redlock::lock_kind;
  auto described = opts(lock_kind::mutex);
  described.description = "worker one";
  auto mutex = c.acquire("l-mutex", described);
  auto reentrant = c.acquire("l-reentrant", opts(lock_kind::reentrant, "main"));
  auto reader1 = c.acquire("l-rw", opts(lock_kind::read, "r1"));
  auto reader2 = c.acquire("l-rw", opts(lock_kind::read, "r2"));
  auto permit1 = c.acquire("l-sem", opts(lock_kind::semaphore, "", 3));
  auto permit2 = c.acquire("l-sem", opts(lock_kind::semaphore, "", 3));
  auto set_opts = opts(lock_kind::mutex);
  set_opts.other_names = {"l-set-b"};
  auto set = c.acquire("l-set-a", set_opts);
  auto leader = c.campaign("l-lead", opts(lock_kind::mutex));
  // Released, fenced: its fence counter stays, and is no lock.
  c.release(c.acquire("l-gone", opts(lock_kind::mutex)));
  // Held on one master only.
  m[0].command({"SET", "l-one", std::string(32, 'a'), "PX", "20000"});

  auto rows = listed(nodes);
  BOOST_TEST(rows.size() == 8u);
  for (auto& [name, row] : rows) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST(name.find('{') == std::string::npos);  // no companion key listed as a name
      auto pttl = row.at("pttl_ms").as_int64();
      BOOST_TEST(pttl > 0);
      BOOST_TEST(pttl <= 30000);
      BOOST_TEST(row.at("masters").as_int64() == (name == "l-one" ? 1 : 3));
    }
  }
  auto kind = [&](const char* name) { return std::string(rows.at(name).at("kind").as_string()); };
  BOOST_TEST(kind("l-mutex") == "mutex");
  BOOST_TEST(tokens_of(rows.at("l-mutex")) == std::vector<std::string>{mutex.token()});
  BOOST_TEST(holder_of(rows.at("l-mutex")).at("description").as_string() == "worker one");
  BOOST_TEST(holder_of(rows.at("l-mutex")).at("masters").as_int64() == 3);
  BOOST_TEST(kind("l-reentrant") == "reentrant/fair");
  BOOST_TEST(tokens_of(rows.at("l-reentrant")) == std::vector<std::string>{reentrant.token()});
  BOOST_TEST(kind("l-rw") == "rwlock");
  auto readers = std::vector<std::string>{reader1.token(), reader2.token()};
  std::sort(readers.begin(), readers.end());
  BOOST_TEST(tokens_of(rows.at("l-rw")) == readers);
  BOOST_TEST(kind("l-sem") == "semaphore");
  auto permits = std::vector<std::string>{permit1.token(), permit2.token()};
  std::sort(permits.begin(), permits.end());
  BOOST_TEST(tokens_of(rows.at("l-sem")) == permits);
  BOOST_TEST(kind("l-set-a") == "set");
  BOOST_TEST(kind("l-set-b") == "set");
  BOOST_TEST(tokens_of(rows.at("l-set-b")) == std::vector<std::string>{set.token()});
  BOOST_TEST(kind("l-lead") == "election");
  BOOST_TEST(tokens_of(rows.at("l-lead")) == std::vector<std::string>{leader.token()});
  BOOST_TEST(kind("l-one") == "mutex");
  BOOST_TEST(!rows.contains("l-gone"));

  // The text form: one row per name, its holders under it.
  auto text = admin(nodes, "list");
  BOOST_TEST(text.code == 0, text.err);
  BOOST_TEST(text.out.find("l-mutex  mutex  on 3/3 masters") != std::string::npos, text.out);
  BOOST_TEST(text.out.find("\"worker one\"") != std::string::npos, text.out);
  BOOST_TEST(text.out.find("8 locks on 3/3 masters") != std::string::npos, text.out);
  c.resign(leader);
}

BOOST_AUTO_TEST_CASE(list_prefix_names_the_locks_under_that_key_prefix) {
  masters m(3);
  auto nodes = nodes_of(m);
  auto prefixed = m.options(1000ms);
  prefixed.key_prefix = "app:";
  redlock::client app(prefixed), plain(m.options(1000ms));
  auto x = app.acquire("x", opts(redlock::lock_kind::mutex));
  auto sem = app.acquire("s", opts(redlock::lock_kind::semaphore, "", 2));
  auto y = plain.acquire("y", opts(redlock::lock_kind::mutex));
  auto under_app = listed(nodes, "--prefix app:");
  BOOST_TEST(under_app.size() == 2u);
  BOOST_TEST(under_app.contains("x"));
  BOOST_TEST(under_app.contains("s"));  // a semaphore: found by its record of permits
  auto all = listed(nodes);
  BOOST_TEST(all.size() == 3u);
  BOOST_TEST(all.contains("app:x"));
  BOOST_TEST(all.contains("app:s"));
  BOOST_TEST(all.contains("y"));
  // A prefix with glob characters matches itself only.
  BOOST_TEST(listed(nodes, "--prefix 'ap*'").empty());
}

BOOST_AUTO_TEST_CASE(list_stops_at_max_names_and_says_so_on_a_large_keyspace) {
  masters m(3);
  auto nodes = nodes_of(m);
  // 20 locks among 20000 keys that are not: SCAN walks them in calls of
  // its COUNT, never KEYS.
  m.on_all({"EVAL",
            "for i = 1, 20000 do redis.call('SET', 'data:' .. i, 'x') end "
            "for i = 1, 20 do redis.call('SET', 'lk:' .. i, string.rep('b', 32), 'PX', 60000) end",
            "0"});
  auto full = admin(nodes, "list --json --prefix lk:");
  BOOST_REQUIRE_MESSAGE(full.code == 0, full.err);
  auto doc = json::parse(full.out).as_object();
  BOOST_TEST(doc.at("locks").as_array().size() == 20u);
  BOOST_TEST(doc.at("truncated").as_bool() == false);
  auto capped = admin(nodes, "list --json --prefix lk: --max-names 7");
  BOOST_REQUIRE_MESSAGE(capped.code == 0, capped.err);
  doc = json::parse(capped.out).as_object();
  BOOST_TEST(doc.at("locks").as_array().size() == 7u);
  BOOST_TEST(doc.at("truncated").as_bool() == true);
  BOOST_TEST(capped.err.find("truncated") != std::string::npos, capped.err);
  // Walked in calls of 1000 keys (two walks per listing), never with KEYS.
  BOOST_TEST(redlock::testing::command_calls(m[0], {"keys"}) == 0);
  BOOST_TEST(redlock::testing::command_calls(m[0], {"scan"}) >= 20);
  BOOST_TEST(admin(nodes, "list --max-names 0").code == 64);
}

BOOST_AUTO_TEST_CASE(list_reports_a_master_that_does_not_answer) {
  masters m(3);
  auto nodes = nodes_of(m);
  redlock::client c(m.options(1000ms));
  auto l = c.acquire("l-down", opts(redlock::lock_kind::mutex));
  m[2].stop();
  auto r = admin(nodes, "list --json");
  BOOST_TEST(r.code == 0, r.err);
  auto doc = json::parse(r.out).as_object();
  BOOST_TEST(doc.at("nodes").as_array().at(2).as_object().at("ok").as_bool() == false);
  BOOST_TEST(doc.at("locks").as_array().at(0).as_object().at("masters").as_int64() == 2);
  BOOST_TEST(r.err.find("did not answer") != std::string::npos, r.err);
}

// Each kind held, with a waiter of its own kind blocked behind it (retry
// delay 2 s: only a wake-up brings it in sooner), then `redlock release
// --force`: every hold removed on every master, the waiter woken, and its
// fencing token greater than the holders'.
BOOST_AUTO_TEST_CASE(force_release_removes_every_hold_of_each_kind_and_wakes_a_waiter) {
  masters m(3);
  auto nodes = nodes_of(m);
  redlock::client holder(m.options(1000ms)), waiter(m.options(1000ms));
  using redlock::lock_kind;
  struct case_ {
    std::string name;
    std::function<std::vector<redlock::lock>()> hold;
    redlock::acquire_options waiting;
    std::string force_args;
  };
  auto set_of = [](std::vector<std::string> more) {
    auto o = opts(lock_kind::mutex);
    o.other_names = std::move(more);
    return o;
  };
  std::vector<case_> cases{
      {"f-mutex", [&] { return std::vector{holder.acquire("f-mutex", opts(lock_kind::mutex))}; },
       opts(lock_kind::mutex), "--name f-mutex"},
      {"f-reentrant",
       [&] {
         auto l = holder.acquire("f-reentrant", opts(lock_kind::reentrant, "a"));
         return std::vector{l, holder.acquire("f-reentrant", opts(lock_kind::reentrant, "a"))};  // entered twice
       },
       opts(lock_kind::reentrant, "w"), "--name f-reentrant --kind reentrant"},
      {"f-fair", [&] { return std::vector{holder.acquire("f-fair", opts(lock_kind::fair, "a"))}; },
       opts(lock_kind::fair, "w"), "--name f-fair --kind fair"},
      {"f-sem",
       [&] {
         return std::vector{holder.acquire("f-sem", opts(lock_kind::semaphore, "", 2)),
                            holder.acquire("f-sem", opts(lock_kind::semaphore, "", 2))};
       },
       opts(lock_kind::semaphore, "", 2), "--name f-sem --kind semaphore"},
      {"f-rw",
       [&] {
         return std::vector{holder.acquire("f-rw", opts(lock_kind::read, "r1")),
                            holder.acquire("f-rw", opts(lock_kind::read, "r2")),
                            holder.acquire("f-rw", opts(lock_kind::read, "r3"))};
       },
       opts(lock_kind::write, "w"), "--name f-rw --kind rwlock"},
      // A waiter on one name of a set waits as a mutex waiter on that name.
      {"f-set-a", [&] { return std::vector{holder.acquire("f-set-a", set_of({"f-set-b"}))}; }, opts(lock_kind::mutex),
       "--name f-set-a --name f-set-b"},
      {"f-lead", [&] { return std::vector{holder.campaign("f-lead", opts(lock_kind::mutex))}; },
       opts(lock_kind::mutex), "--name f-lead --kind election"},
  };
  for (auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      auto held = c.hold();
      std::uint64_t held_fence = 0;
      std::vector<std::string> held_tokens;
      for (auto& l : held) {
        held_fence = std::max(held_fence, l.fence().value_or(0));
        if (std::find(held_tokens.begin(), held_tokens.end(), l.token()) == held_tokens.end())
          held_tokens.push_back(l.token());
      }
      std::sort(held_tokens.begin(), held_tokens.end());
      auto waiting = c.waiting;
      waiting.wait = 5000ms;
      waiting.retry_delay = 2000ms;
      waiting.retry_jitter = 0ms;
      redlock::testing::result forced;
      std::thread operator_([&] {
        std::this_thread::sleep_for(300ms);
        forced = admin(nodes, "release --force --json " + c.force_args);
      });
      auto started = std::chrono::steady_clock::now();
      auto got = c.name == "f-lead" ? waiter.campaign(c.name, waiting) : waiter.acquire(c.name, waiting);
      auto waited = std::chrono::steady_clock::now() - started;
      operator_.join();
      BOOST_TEST(forced.code == 0, forced.err);
      BOOST_TEST(forced.err.find("keeps running until its next lease check") != std::string::npos, forced.err);
      // A quorum of masters, at least, said it removed every hold (a set:
      // of each of its names; a hold is promised on a quorum only), and no
      // master removed anything else.
      auto per_master = removed_tokens(forced.out);
      auto removed_all = std::count(per_master.begin(), per_master.end(), held_tokens);
      auto names = c.name == "f-set-a" ? 2 : 1;
      BOOST_TEST(removed_all >= 2 * names, forced.out);
      for (auto& tokens : per_master)
        for (auto& t : tokens)
          BOOST_TEST((std::find(held_tokens.begin(), held_tokens.end(), t) != held_tokens.end()), t);
      BOOST_TEST(waited < 1500ms, "not woken: " << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                                                << " ms");
      // Fence counters were kept: the next holder's token is greater.
      BOOST_TEST(got.fence().value_or(0) > held_fence);
      if (c.name == "f-set-a") BOOST_TEST(m.holding("f-set-b") == 0u);
      if (c.name == "f-lead")
        waiter.resign(got);
      else
        waiter.release(got);
    }
  }
}

BOOST_AUTO_TEST_CASE(force_release_of_a_free_name_and_of_another_kind_touches_nothing) {
  masters m(3);
  auto nodes = nodes_of(m);
  redlock::client c(m.options(1000ms));
  auto free = admin(nodes, "release --force --name nobody");
  BOOST_TEST(free.code == 0, free.err);
  BOOST_TEST(free.out.find("nothing held") != std::string::npos, free.out);
  BOOST_TEST(free.err.find("warning") == std::string::npos, free.err);  // nothing removed: no holder to warn about

  auto l = c.acquire("k-mutex", opts(redlock::lock_kind::mutex));
  auto other = admin(nodes, "release --force --name k-mutex --kind semaphore");
  BOOST_TEST(other.code == 64, other.err);
  BOOST_TEST(other.out.find("left alone") != std::string::npos, other.out);
  BOOST_TEST(m.holding("k-mutex") == 3u);

  // Someone else's data under the name: refused, untouched.
  m.on_all({"RPUSH", "k-list", "x"});
  m.on_all({"SET", "k-text", "not a token"});
  for (auto name : {"k-list", "k-text"}) {
    auto foreign = admin(nodes, std::string("release --force --name ") + name);
    BOOST_TEST(foreign.code == 65, foreign.err);
    BOOST_TEST(foreign.out.find("not released") != std::string::npos, foreign.out);
  }
  BOOST_TEST(m[0].command({"LLEN", "k-list"}) == "1");
  BOOST_TEST(m[0].command({"GET", "k-text"}) == "not a token");
  c.release(l);
}

BOOST_AUTO_TEST_CASE(force_release_bad_input_exits_64_and_touches_nothing) {
  masters m(3);
  auto nodes = nodes_of(m);
  redlock::client c(m.options(1000ms));
  auto l = c.acquire("bad", opts(redlock::lock_kind::mutex));
  for (auto args : {"release --force", "release --force --name bad --kind queue", "release --force --name ''",
                    "release --force --name bad --token abc", "release --name bad --kind mutex --token abc"}) {
    BOOST_TEST_CONTEXT(args) {
      auto r = admin(nodes, args);
      BOOST_TEST(r.code == 64);
      BOOST_TEST(r.err.rfind("redlock: ", 0) == 0u, r.err);
      BOOST_TEST(std::count(r.err.begin(), r.err.end(), '\n') == 1, r.err);
    }
  }
  BOOST_TEST(m.holding("bad") == 3u);
  c.release(l);
}

// The synopsis in the user guide's CLI section is the one `redlock --help`
// prints, line for line (leading blanks aside): they cannot drift apart.
BOOST_AUTO_TEST_CASE(cli_synopsis_matches_the_user_guide) {
  auto trimmed = [](const std::string& line) { return line.substr(std::min(line.find_first_not_of(' '), line.size())); };
  std::vector<std::string> guide;
  {
    std::ifstream in(REDLOCK_USER_GUIDE);
    std::string line;
    bool in_section = false;
    while (std::getline(in, line)) {
      if (line == "## The `redlock` command-line tool") in_section = true;
      else if (in_section && line.starts_with("### ")) break;
      else if (in_section && line.starts_with("    ")) guide.push_back(trimmed(line));
    }
  }
  auto help = cli("", "--help");
  BOOST_REQUIRE_EQUAL(help.code, 0);
  std::vector<std::string> printed;
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line) && line != "exit status:";)
    if (line.starts_with("  ")) printed.push_back(trimmed(line));
  BOOST_TEST(guide.size() >= 10u);
  BOOST_TEST(guide == printed, boost::test_tools::per_element());
  BOOST_TEST(help.out.find("exit status:") != std::string::npos);
}

// Each subcommand's --help names its values (DURATION, URI, N) and lists
// only the options it takes; run and elect print COMMAND's output, not
// their own, so they take no --json.
BOOST_AUTO_TEST_CASE(cli_subcommand_help_names_values_and_lists_only_its_options) {
  for (auto sub : {"run", "elect", "acquire", "extend", "release", "status", "list", "doctor"}) {
    BOOST_TEST_CONTEXT(sub) {
      auto r = cli("", std::string(sub) + " --help");
      BOOST_TEST(r.code == 0, r.err);
      BOOST_TEST(r.out.find(" arg ") == std::string::npos, r.out);
      BOOST_TEST(r.out.find("--nodes URI,...") != std::string::npos, r.out);
    }
  }
  auto acquire = cli("", "acquire --help").out;
  BOOST_TEST(acquire.find("--ttl DURATION") != std::string::npos, acquire);
  BOOST_TEST(acquire.find("--permits N") != std::string::npos, acquire);
  auto elect = cli("", "elect --help").out;
  for (auto absent : {"--kind", "--permits", "--shared", "--exclusive", "--json"})
    BOOST_TEST(elect.find(absent) == std::string::npos, absent << " in " << elect);
  BOOST_TEST(cli("", "run --help").out.find("--json") == std::string::npos);
  BOOST_TEST(cli("", "extend --help").out.find("--force") == std::string::npos);
  masters m(1);
  for (auto args : {"run --name x --json -- true", "elect --name x --json -- true", "elect --name x --kind fair -- true"}) {
    auto r = cli(nodes_of(m), args);
    BOOST_TEST(r.code == 64, args << ": " << r.err);
  }
  BOOST_TEST(m[0].command({"DBSIZE"}) == "0");
}

// redlock.1 as the build made it (and the .deb installs it): roff that
// groff reads without a warning, with every subcommand and exit status
// `redlock --help` lists and every option each subcommand's --help lists.
BOOST_AUTO_TEST_CASE(cli_man_page_is_valid_roff_with_every_subcommand_option_and_exit_status) {
  BOOST_REQUIRE_MESSAGE(std::system("command -v groff >/dev/null") == 0,
                        "groff not found: `scripts/setup test` installs groff-base");
  auto base = "/tmp/redlock-man-test-" + std::to_string(::getpid());
  auto check = "zcat " + redlock::testing::quote(REDLOCK_MAN_PAGE) + " >" + base + ".1 && groff -man -Tutf8 -ww -z " +
               base + ".1 2>" + base + ".err";
  BOOST_TEST(std::system(check.c_str()) == 0);
  auto page = redlock::testing::slurp(base + ".1");
  BOOST_TEST(redlock::testing::slurp(base + ".err") == "");
  std::remove((base + ".1").c_str());
  std::remove((base + ".err").c_str());
  BOOST_TEST(page.starts_with(".\\\" Made by `redlock --man`"));
  auto roff = [](std::string s) {  // as the page writes it: minus signs escaped
    for (auto at = s.find('-'); at != std::string::npos; at = s.find('-', at + 2)) s.replace(at, 1, "\\-");
    return s;
  };

  auto help = cli("", "--help").out;
  std::istringstream lines(help);
  std::vector<std::string> subs, statuses;
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first, second;
    words >> first >> second;
    if (line == "exit status:") in_table = true;
    else if (in_table) statuses.push_back(first);
    else if (first == "redlock" && line.starts_with("  ") && std::find(subs.begin(), subs.end(), second) == subs.end())
      subs.push_back(second);
  }
  BOOST_TEST(subs.size() == 8u);
  BOOST_TEST(statuses.size() >= 7u);
  for (auto& sub : subs) {
    BOOST_TEST_CONTEXT(sub) {
      auto start = page.find(".SS redlock " + sub + " [options]");
      BOOST_REQUIRE(start != std::string::npos);
      auto section = page.substr(start, page.find("\n.S", start + 1) - start);
      std::istringstream words(cli("", sub + " --help").out);
      for (std::string word; words >> word;)
        if (word.starts_with("--")) BOOST_TEST(section.find(roff(word)) != std::string::npos, word);
    }
  }
  for (auto& status : statuses) BOOST_TEST(page.find(".TP\n\\fB" + status + "\\fR\n") != std::string::npos, status);
}
