// SPDX-License-Identifier: Apache-2.0
// `redlock acquire`, `extend`, `release`: a lock that outlives one command,
// handed between shell commands by its token (async_client::adopt), for
// every kind: the token names one hold, and extend and release act on it
// alone.
#include "commands.hpp"
#include "connection_log.hpp"
#include "lock_args.hpp"

#include <boost/json.hpp>

#include <iostream>

namespace redlock::cli {

namespace po = boost::program_options;
namespace json = boost::json;
using namespace std::chrono_literals;

int acquire(const std::vector<std::string>& args) {
  po::options_description d("redlock acquire [options]");
  add_common(d);
  add_acquire_options(d);
  auto vm = parse(args, d);
  auto c = read_common(vm, true);
  auto a = read_acquire(vm);
  a.other_names = c.more_names;
  c.client.observer = with_connection_log(vm, nullptr);
  redlock::client client(c.client);
  auto l = acquire_or_explain(client, c, a, vm);
  if (!l) return ex_tempfail;
  print_lock(*l, c.json);
  return 0;
}

namespace {

// Which hold `token` names under the name(s) given, from what the masters
// show (status): its kind, a permit's slot and number of permits, a set's
// other names (async_client::adopt acts on that hold alone). A token no
// answering master shows is refused: releasing or extending it would act on
// nothing, and the operator should hear why.
redlock::adopt_options hold_named_by(redlock::client& client, const common& c, const std::string& token) {
  redlock::adopt_options how;
  const bool set_token = token.rfind("s:", 0) == 0;
  if (set_token && c.more_names.empty())
    usage("token '" + token + "' holds several names together: give every one of them with --name " +
          "(they are in $REDLOCK_NAMES), or a release would free only '" + c.name + "'");
  if (!set_token && !c.more_names.empty())
    usage("--name given " + std::to_string(c.more_names.size() + 1) + " times, but token '" + token +
          "' holds one name (a hold of several names has an 's:' token)");
  how.other_names = c.more_names;
  boost::system::error_code ec;
  auto nodes = client.status(c.name, ec);
  if (ec) {
    std::cerr << "redlock: cannot read '" << c.name << "' on the masters: " << ec.message() << "\n";
    throw already_reported{exit_code_for(ec)};
  }
  using redlock::key_content;
  using redlock::lock_kind;
  for (auto& n : nodes) {
    if (n.error) continue;
    if (n.content == key_content::mutex && n.token == token) {
      how.kind = lock_kind::mutex;
      return how;
    }
    if (n.content == key_content::reentrant || n.content == key_content::rwlock)
      for (auto& o : n.owners)
        if (o.owner == token) {
          // A reentrant and a fair hold release and extend alike.
          how.kind = n.content == key_content::reentrant ? lock_kind::reentrant
                     : token.rfind("w:", 0) == 0     ? lock_kind::write
                                                     : lock_kind::read;
          return how;
        }
    if (n.content == key_content::semaphore && n.permits)
      for (auto& h : n.permit_holds)
        if (h.token == token) {
          how.kind = lock_kind::semaphore;
          how.permit = h.permit;
          how.permits = *n.permits;
          return how;
        }
  }
  std::cerr << "redlock: token '" << token << "' names no hold of '" << c.name
            << "' on any master that answered (released, expired, or another lock's)\n";
  throw already_reported{ex_tempfail};
}

}  // namespace

int extend_or_release(const std::vector<std::string>& args, bool extend) {
  po::options_description d(extend ? "redlock extend [options]" : "redlock release [options]");
  add_common(d);
  d.add_options()("token", value_named("TOKEN"), "the holder's token (default: $REDLOCK_TOKEN)");
  if (extend) d.add_options()("ttl", value_named("DURATION"), "new lease time (default 10s)");
  if (!extend)
    d.add_options()("force", "remove every hold of the name(s) on every master, whoever holds them (an operator's tool)")(
        "kind", value_named("KIND"),
        "with --force: only a hold of this kind (mutex, set, election, reentrant, fair, rwlock, semaphore)");
  auto vm = parse(args, d);
  if (!extend && vm.count("force")) return force_release(vm);
  if (vm.count("kind")) usage("--kind goes with --force (a token names its hold's kind itself)");
  auto c = read_common(vm, true);
  auto token = token_arg(vm);
  auto ttl = extend ? duration_arg(vm, "ttl", 10s) : 10s;
  redlock::client client(c.client);
  auto l = client.adopt(c.name, token, ttl, hold_named_by(client, c, token));
  if (extend) {
    client.extend(l, ttl);
    print_lock(l, c.json);
  } else {
    client.release(l);
    if (c.json) std::cout << json::serialize(json::object{{"name", c.name}, {"released", true}}) << "\n";
  }
  return 0;
}

}  // namespace redlock::cli
