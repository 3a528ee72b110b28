// SPDX-License-Identifier: Apache-2.0
#include "lock_args.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <cstdlib>
#include <iostream>
#include <unistd.h>

namespace redlock::cli {

namespace po = boost::program_options;
namespace json = boost::json;
using namespace std::chrono_literals;

void add_client_options(po::options_description& d, bool json) {
  add_connection_options(d);
  d.add_options()("node-timeout", value_named("DURATION"), "per-master deadline (default 50ms)")(
      "prefix", value_named("P"), "key prefix");
  if (json) d.add_options()("json", "machine-readable output");
  d.add_options()("help,h", "this help");
}

redlock::client_options read_client_options(const po::variables_map& vm) {
  redlock::client_options client;
  read_connection(vm, client);
  client.node_timeout = duration_arg(vm, "node-timeout", 50ms);
  if (vm.count("prefix")) client.key_prefix = vm["prefix"].as<std::string>();
  return client;
}

void add_common(po::options_description& d, bool json) {
  d.add_options()(
      "name", po::value<std::vector<std::string>>()->value_name("NAME"),
      "lock name (run, acquire: again for more names, held all or none; release, extend: every name of such a hold)");
  add_client_options(d, json);
}

common read_common(const po::variables_map& vm, bool several_names) {
  common c;
  c.client = read_client_options(vm);
  auto names = vm.count("name") ? vm["name"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (names.empty()) usage("--name is required");
  for (auto& n : names)
    if (n.empty()) usage("--name must not be empty");
  if (names.size() > 1 && !several_names)
    usage("--name given " + std::to_string(names.size()) + " times: this command takes one name");
  c.name = names.front();
  c.more_names.assign(names.begin() + 1, names.end());
  c.json = vm.count("json") > 0;
  return c;
}

void add_acquire_options(po::options_description& d, bool kinds) {
  d.add_options()("ttl", value_named("DURATION"), "lease time (default 10s)")(
      "wait", value_named("DURATION"), "how long to keep trying (default 0s: one attempt)")(
      "fenced", "also obtain a fencing token");
  if (kinds)
    d.add_options()("kind", value_named("KIND"), "mutex (default), reentrant or fair")(
        "permits", value_named("N"), "a semaphore: at most N hold the name at once (1 to 1024)")(
        "shared", "a read-write lock's shared (read) side: with other readers, never with a writer")(
        "exclusive", "a read-write lock's exclusive (write) side: no other holder");
  d.add_options()("verbose,v",
                  "print connection events on stderr (connected, connect failed, closed: with each master's address); "
                  "when not acquired, also what each master said in the last attempt")(
      "description", value_named("WORDS"),
      "who holds it, in words, shown by `redlock status` (default host:pid; '' for none)");
}

namespace {
std::string host_and_pid() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "unknown-host") + ":" + std::to_string(::getpid());
}
}  // namespace

redlock::acquire_options read_acquire(const po::variables_map& vm) {
  redlock::acquire_options a;
  a.ttl = duration_arg(vm, "ttl", 10s);
  a.wait = duration_arg(vm, "wait", 0s);
  a.fenced = vm.count("fenced") > 0;
  a.description = vm.count("description") ? vm["description"].as<std::string>() : host_and_pid();
  if (vm.count("kind")) {
    auto k = vm["kind"].as<std::string>();
    if (k == "mutex")
      a.kind = redlock::lock_kind::mutex;
    else if (k == "reentrant")
      a.kind = redlock::lock_kind::reentrant;
    else if (k == "fair")
      a.kind = redlock::lock_kind::fair;
    else
      usage("--kind '" + k + "' is not a lock kind (mutex, reentrant, fair)");
    // One process is one owner: shell scripts hand the token between commands.
    if (a.kind != redlock::lock_kind::mutex) a.owner = "pid" + std::to_string(::getpid());
  }
  if (vm.count("shared") || vm.count("exclusive")) {
    if (vm.count("shared") && vm.count("exclusive")) usage("--shared and --exclusive: one side of a read-write lock");
    if (vm.count("kind") || vm.count("permits")) usage("--shared / --exclusive do not go with --kind or --permits");
    a.kind = vm.count("shared") ? redlock::lock_kind::read : redlock::lock_kind::write;
    if (vm.count("description")) usage("--description is not kept for read-write locks yet");
    a.description.clear();
    a.owner = "pid" + std::to_string(::getpid());
  }
  if (vm.count("permits")) {
    if (vm.count("kind")) usage("--permits makes a semaphore: it does not go with --kind");
    const auto& text = vm["permits"].as<std::string>();
    unsigned n = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end != text.data() + text.size() || n < 1 || n > redlock::max_permits)
      usage("--permits '" + text + "' is not a number of permits (1 to " + std::to_string(redlock::max_permits) + ")");
    a.kind = redlock::lock_kind::semaphore;
    a.permits = n;
  }
  return a;
}

namespace {

void explain(const std::string& name, const redlock::acquire_report& report, bool verbose) {
  std::cerr << "redlock: lock '" << name << "' not acquired";
  if (report.attempts > 0)
    std::cerr << " (" << report.attempts << (report.attempts == 1 ? " attempt" : " attempts")
              << (report.last_attempt.empty() ? "" : "; last: " + redlock::summarize(report.last_attempt)) << ")";
  std::cerr << "\n";
  if (verbose)
    for (auto& node : report.last_attempt) std::cerr << "redlock:   " << redlock::describe(node) << "\n";
}

const char* kind_words(redlock::lock_kind k) {
  using redlock::lock_kind;
  switch (k) {
    case lock_kind::mutex: return "a mutex";
    case lock_kind::reentrant: return "a reentrant lock";
    case lock_kind::fair: return "a fair lock";
    case lock_kind::semaphore: return "a semaphore";
    case lock_kind::read:
    case lock_kind::write: return "a read-write lock";
  }
  return "a lock";
}

// What kind of lock, other than `asked`, the name is held as on some master
// (status), or nothing when what is there is not one of our locks (someone
// else's data: the scripts' WRONGTYPE stands).
std::optional<std::string> held_as_other_kind(redlock::client& client, const std::string& name,
                                              redlock::lock_kind asked) {
  boost::system::error_code ec;
  auto nodes = client.status(name, ec);
  if (ec) return std::nullopt;
  std::string asked_words = kind_words(asked);
  for (auto& n : nodes) {
    std::string words;
    if (n.content == redlock::key_content::mutex && looks_like_token(n.token)) words = kind_words(redlock::lock_kind::mutex);
    if (n.content == redlock::key_content::rwlock) words = kind_words(redlock::lock_kind::read);
    if (n.content == redlock::key_content::reentrant && !n.owners.empty()) words = "a reentrant or fair lock";
    if (!words.empty() && words != asked_words) return words;
  }
  return std::nullopt;
}

}  // namespace

bool looks_like_token(std::string s) {
  if (s.starts_with("s:")) s.erase(0, 2);
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::optional<redlock::lock> acquire_or_explain(redlock::client& client, const common& c, redlock::acquire_options a,
                                                const po::variables_map& vm) {
  auto report = std::make_shared<redlock::acquire_report>();
  a.report = report;
  bool verbose = vm.count("verbose") > 0;
  try {
    auto l = client.try_acquire(c.name, a);
    if (!l) explain(c.name, *report, verbose);
    return l;
  } catch (const redlock::error& e) {
    // Another kind of lock under this name is a mistake in the command line
    // (a usage error), not someone else's data (EX_DATAERR).
    if (e.code() == redlock::errc::wrong_type)
      if (auto other = held_as_other_kind(client, c.name, a.kind)) {
        std::cerr << "redlock: lock '" << c.name << "' is held as " << *other << ", not " << kind_words(a.kind)
                  << ": use the kind it was taken as, or another name\n";
        throw already_reported{ex_usage};
      }
    std::cerr << "redlock: " << e.what() << "\n";
    if (verbose && e.report())
      for (auto& node : e.report()->last_attempt) std::cerr << "redlock:   " << redlock::describe(node) << "\n";
    throw already_reported{exit_code_for(e.code())};
  }
}

std::string token_arg(const po::variables_map& vm) {
  if (vm.count("token")) return vm["token"].as<std::string>();
  if (const char* env = std::getenv("REDLOCK_TOKEN")) return env;
  usage("--token is required (or set REDLOCK_TOKEN)");
}

int exit_code_for(const boost::system::error_code& ec) {
  using redlock::condition;
  // wrong_type is an invalid_argument, but "the key holds someone else's
  // data" has its own status (EX_DATAERR) so scripts can tell it apart.
  if (ec == redlock::errc::wrong_type) return ex_dataerr;
  if (ec == condition::invalid_argument) return ex_usage;
  if (ec == condition::contended || ec == condition::lost || ec == redlock::errc::timeout) return ex_tempfail;
  return ex_unavailable;
}

const char* reason_name(redlock::lost_reason r) {
  switch (r) {
    case redlock::lost_reason::expired: return "validity expired before a renewal reached a quorum";
    case redlock::lost_reason::taken_over: return "our token is gone from a quorum of masters";
    case redlock::lost_reason::quorum_lost: return "masters unreachable until validity ended";
    case redlock::lost_reason::max_hold: return "held for --max-hold; renewal stopped";
    default: return "unknown";
  }
}

namespace {
// `s` as one shell word: as it is when every character is plain, else in
// single quotes (each ' written as '\''), so that `eval` reads it back.
std::string shell_word(const std::string& s) {
  bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_:./@%+,-") ==
                                std::string::npos;
  if (plain) return s;
  std::string quoted = "'";
  for (char ch : s) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}
}  // namespace

void print_lock(const redlock::lock& l, bool as_json) {
  auto names = l.names();
  if (as_json) {
    json::object o{{"name", l.name()}, {"token", l.token()}, {"validity_ms", l.remaining_validity().count()}};
    if (l.fence()) o["fence"] = *l.fence();
    if (l.permit()) o["permit"] = *l.permit();
    if (names.size() > 1) o["names"] = json::value_from(names);
    std::cout << json::serialize(o) << "\n";
    return;
  }
  // eval-able by a shell: eval "$(redlock acquire --name x)"
  std::cout << "REDLOCK_NAME=" << shell_word(l.name()) << "\nREDLOCK_TOKEN=" << shell_word(l.token())
            << "\nREDLOCK_VALIDITY_MS=" << l.remaining_validity().count() << "\n";
  if (l.fence()) std::cout << "REDLOCK_FENCE=" << *l.fence() << "\n";
  if (l.permit()) std::cout << "REDLOCK_PERMIT=" << *l.permit() << "\n";
  if (names.size() > 1) {  // as `redlock run` exports them: sorted, space-separated
    std::string all;
    for (auto& n : names) all += (all.empty() ? "" : " ") + n;
    std::cout << "REDLOCK_NAMES=" << shell_word(all) << "\n";
  }
}

}  // namespace redlock::cli
