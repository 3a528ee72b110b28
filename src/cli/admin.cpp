// SPDX-License-Identifier: Apache-2.0
// The operator's subcommands: `redlock list` (every lock on the masters, one
// row per name, merged from each master's view) and `redlock release
// --force` (every hold of a name removed, whoever holds it).
#include "commands.hpp"
#include "lock_args.hpp"

#include <boost/asio/use_future.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <future>
#include <iostream>
#include <map>
#include <set>

namespace redlock::cli {

namespace po = boost::program_options;
namespace json = boost::json;
using redlock::key_content;

namespace {

// One holder of a listed lock, merged over the masters that show it.
struct holder_row {
  std::string role;  // "holder", "owner", "reader", "writer", "permit"
  std::string token;
  std::optional<std::uint64_t> number;  // an owner's entry count, a permit's slot
  std::string description;
  std::size_t masters = 0;
  long long pttl_ms = -2;  // the longest left on any of them
};

// One row of `redlock list`.
struct lock_row {
  std::string name;
  std::set<std::string> kinds;  // more than one only when masters disagree
  std::size_t masters = 0;      // where the name is held
  long long pttl_ms = -2;       // the longest left on any master
  std::vector<holder_row> holders;
  std::vector<std::string> waiters;  // a fair lock's queue, as the first master that has one shows it
};

// The kind a master's view shows, in the words of --kind: what the key
// holds (as the library reads it), told apart further where the holder
// says more (a set's token, a leader's proclamation, a fair queue). A fair
// lock nobody waits for is stored exactly as a reentrant one. Empty: no lock.
std::string kind_of(const redlock::node_lock_view& n) {
  switch (n.content) {
    case key_content::mutex:
      if (!looks_like_token(n.token)) return {};  // a string of someone else's, not a lock
      if (n.token.starts_with("s:")) return "set";
      if (n.description.starts_with("epoch ")) return "election";
      return "mutex";
    case key_content::reentrant: return n.waiters.empty() ? "reentrant/fair" : "fair";
    case key_content::rwlock: return "rwlock";
    case key_content::semaphore: return "semaphore";
    default: return {};
  }
}

void add_holder(lock_row& row, holder_row h) {
  auto same = std::find_if(row.holders.begin(), row.holders.end(), [&](const holder_row& o) {
    return o.token == h.token && (h.role != "permit" || o.number == h.number);
  });
  if (same == row.holders.end()) {
    h.masters = 1;
    row.holders.push_back(std::move(h));
    return;
  }
  ++same->masters;
  same->pttl_ms = std::max(same->pttl_ms, h.pttl_ms);
  if (h.role == "owner") same->number = std::max(same->number, h.number);
  if (same->description.empty()) same->description = std::move(h.description);
}

lock_row merge(const std::string& name, const std::vector<redlock::node_lock_view>& nodes) {
  lock_row row{name, {}, 0, -2, {}, {}};
  for (auto& n : nodes) {
    auto kind = n.error ? std::string() : kind_of(n);
    if (kind.empty()) continue;
    row.kinds.insert(kind);
    ++row.masters;
    if (row.waiters.empty()) row.waiters = n.waiters;
    switch (n.content) {
      case key_content::mutex: add_holder(row, {"holder", n.token, {}, n.description, 0, n.pttl.count()}); break;
      case key_content::reentrant:
        for (auto& o : n.owners) {
          // The description names one owner (status shows it for that one alone).
          bool described = n.owners.size() == 1;
          add_holder(row, {"owner", o.owner, o.count, described ? n.description : "", 0, n.pttl.count()});
        }
        break;
      case key_content::rwlock:
        for (auto& o : n.owners)
          add_holder(row, {o.owner.starts_with("w:") ? "writer" : "reader", o.owner, {}, {}, 0, n.pttl.count()});
        break;
      case key_content::semaphore:
        for (auto& p : n.permit_holds) add_holder(row, {"permit", p.token, p.permit, p.description, 0, p.pttl.count()});
        break;
      default: break;
    }
  }
  for (auto& h : row.holders) row.pttl_ms = std::max(row.pttl_ms, h.pttl_ms);
  return row;
}

std::string joined(const std::set<std::string>& words) {
  std::string out;
  for (auto& w : words) out += (out.empty() ? "" : ",") + w;
  return out;
}

// Each name's view of every master: a few reads in flight at once, so that
// a master that does not answer costs its node timeout per batch, not per name.
std::vector<lock_row> read_rows(redlock::client& client, const std::vector<std::string>& names) {
  constexpr std::size_t in_flight = 32;
  std::vector<lock_row> rows;
  for (std::size_t first = 0; first < names.size(); first += in_flight) {
    std::vector<std::future<std::vector<redlock::node_lock_view>>> views;
    for (std::size_t i = first; i < std::min(names.size(), first + in_flight); ++i)
      views.push_back(client.async().async_status(names[i], boost::asio::use_future));
    for (std::size_t i = 0; i < views.size(); ++i) {
      auto row = merge(names[first + i], views[i].get());
      if (row.masters > 0) rows.push_back(std::move(row));  // released since, or not a lock
    }
  }
  return rows;
}

json::object holder_json(const holder_row& h) {
  json::object o{{"role", h.role}, {"token", h.token}, {"masters", h.masters}, {"pttl_ms", h.pttl_ms}};
  if (h.number) o[h.role == "permit" ? "permit" : "count"] = *h.number;
  if (!h.description.empty()) o["description"] = h.description;
  return o;
}

void print_holder(const holder_row& h, std::size_t masters) {
  std::cout << "    " << h.role;
  if (h.role == "permit") std::cout << " " << h.number.value_or(0);
  std::cout << " " << h.token;
  if (h.role == "owner" && h.number) std::cout << " (entered " << *h.number << "x)";
  // Quoted: it is whatever the holder wrote.
  if (!h.description.empty()) std::cout << " \"" << h.description << "\"";
  std::cout << ", on " << h.masters << "/" << masters << " masters, pttl " << h.pttl_ms << " ms\n";
}

}  // namespace

int list(const std::vector<std::string>& args) {
  po::options_description d("redlock list [options]: every lock on the masters (SCAN), one row per name");
  d.add_options()("max-names", po::value<std::size_t>()->value_name("N"),
                  "stop after N names, and say the list was truncated (default 10000)");
  add_client_options(d);
  auto vm = parse(args, d);
  redlock::list_options how;
  if (vm.count("max-names")) how.max_names = vm["max-names"].as<std::size_t>();
  if (how.max_names == 0) usage("--max-names must be at least 1");
  const bool as_json = vm.count("json") > 0;
  redlock::client client(read_client_options(vm));
  auto listing = client.async().async_list(how, boost::asio::use_future).get();
  auto rows = read_rows(client, listing.names);
  std::size_t answered = 0;
  for (auto& n : listing.nodes) answered += n.error ? 0 : 1;
  const std::size_t masters = listing.nodes.size();
  if (as_json) {
    json::array nodes, locks;
    for (auto& n : listing.nodes) {
      json::object o{{"node", n.node}, {"ok", !n.error}};
      if (n.error) o["error"] = n.error.message();
      nodes.push_back(std::move(o));
    }
    for (auto& r : rows) {
      json::array holders;
      for (auto& h : r.holders) holders.push_back(holder_json(h));
      json::object o{{"name", r.name}, {"kind", joined(r.kinds)}, {"masters", r.masters}, {"pttl_ms", r.pttl_ms},
                     {"holders", std::move(holders)}};
      if (!r.waiters.empty()) o["waiters"] = json::array(r.waiters.begin(), r.waiters.end());
      locks.push_back(std::move(o));
    }
    std::cout << json::serialize(json::object{{"masters", masters},
                                              {"nodes", std::move(nodes)},
                                              {"truncated", listing.truncated},
                                              {"locks", std::move(locks)}})
              << "\n";
  } else {
    for (auto& r : rows) {
      std::cout << r.name << "  " << joined(r.kinds) << "  on " << r.masters << "/" << masters << " masters  pttl "
                << r.pttl_ms << " ms\n";
      for (auto& h : r.holders) print_holder(h, masters);
      if (!r.waiters.empty()) {
        std::cout << "    queue";
        for (auto& w : r.waiters) std::cout << " " << w;
        std::cout << "\n";
      }
    }
    std::cout << rows.size() << (rows.size() == 1 ? " lock" : " locks") << " on " << answered << "/" << masters
              << " masters that answered\n";
  }
  for (auto& n : listing.nodes)
    if (n.error) std::cerr << "redlock: " << n.node << " did not answer: " << n.error.message() << " (its locks are not listed)\n";
  if (listing.truncated)
    std::cerr << "redlock: truncated: more than " << how.max_names << " names; only " << how.max_names
              << " were read (--max-names, or --prefix to narrow)\n";
  return answered == 0 ? ex_unavailable : 0;
}

namespace {

// --kind for a forced release: the kinds as `redlock list` shows them, each
// to what its hold is on the masters (a set's names, a leader, a mutex are
// all one string key; a reentrant and a fair lock, owners in a hash).
key_content forced_kind(const std::string& k) {
  if (k == "mutex" || k == "set" || k == "election") return key_content::mutex;
  if (k == "reentrant" || k == "fair") return key_content::reentrant;
  if (k == "rwlock" || k == "read-write") return key_content::rwlock;
  if (k == "semaphore") return key_content::semaphore;
  usage("--kind '" + k + "' is not a lock kind (mutex, set, election, reentrant, fair, rwlock, semaphore)");
}

json::object removed_json(const redlock::removed_hold& h) {
  json::object o{{"role", h.what}, {"token", h.token}};
  if (h.number) o[h.what == "permit" ? "permit" : "count"] = *h.number;
  if (!h.description.empty()) o["description"] = h.description;
  return o;
}

void print_removed(const redlock::removed_hold& h) {
  std::cout << " " << h.what;
  if (h.what == "permit") std::cout << " " << h.number.value_or(0);
  std::cout << " " << h.token;
  if (!h.description.empty()) std::cout << " \"" << h.description << "\"";
  std::cout << ";";
}

}  // namespace

int force_release(const po::variables_map& vm) {
  if (vm.count("token")) usage("--force removes every hold of the name: it takes no --token");
  auto c = read_common(vm, true);
  std::optional<key_content> only;
  if (vm.count("kind")) only = forced_kind(vm["kind"].as<std::string>());
  std::vector<std::string> names{c.name};
  names.insert(names.end(), c.more_names.begin(), c.more_names.end());
  redlock::client client(c.client);
  int status = 0;
  bool removed_any = false;
  json::array out;
  for (auto& name : names) {
    auto nodes = client.async().async_force_release(name, only, boost::asio::use_future).get();
    json::array per_node;
    if (!c.json) std::cout << "lock '" << name << "':\n";
    for (auto& n : nodes) {
      json::object o{{"node", n.node}, {"ok", !n.error}};
      if (!c.json) std::cout << "  " << n.node << ":";
      if (n.error) {
        // Not removed there: what it holds stays until it expires, or this is run again.
        o["error"] = n.error.message();
        status = std::max(status, n.error == redlock::errc::wrong_type ? ex_dataerr : ex_unavailable);
        if (!c.json) std::cout << " not released: " << n.error.message() << "\n";
        per_node.push_back(std::move(o));
        continue;
      }
      json::array removed;
      for (auto& h : n.removed) removed.push_back(removed_json(h));
      o["found"] = n.found;
      o["removed"] = std::move(removed);
      per_node.push_back(std::move(o));
      removed_any |= !n.removed.empty();
      if (n.removed.empty() && n.found != "free") status = std::max(status, ex_usage);  // another kind: untouched
      if (c.json) continue;
      if (!n.removed.empty()) {
        std::cout << " removed";
        for (auto& h : n.removed) print_removed(h);
      }
      if (n.found == "free")
        std::cout << " nothing held";
      else if (n.removed.empty())
        std::cout << " held as " << n.found << ", not the --kind asked: left alone";
      std::cout << "\n";
    }
    out.push_back(json::object{{"name", name}, {"nodes", std::move(per_node)}});
  }
  if (c.json) std::cout << json::serialize(json::object{{"released", std::move(out)}}) << "\n";
  if (removed_any)
    std::cerr << "redlock: warning: a holder that is still running is not stopped: it keeps running until its next "
                 "lease check (renewal) finds its token gone, up to its TTL; stop it first if it must not go on\n";
  return status;
}

}  // namespace redlock::cli
