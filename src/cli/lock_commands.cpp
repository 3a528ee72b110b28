// SPDX-License-Identifier: Apache-2.0
// `redlock acquire`, `extend`, `release`: a lock that outlives one command,
// handed between shell commands by its token (async_client::adopt).
#include "commands.hpp"
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
  auto c = read_common(vm);
  auto a = read_acquire(vm);
  // `release` and `extend` find a hold by name and token; a permit is also
  // known by its slot, which they cannot take yet.
  if (a.kind == redlock::lock_kind::read || a.kind == redlock::lock_kind::write)
    usage("--shared / --exclusive: a read-write hold is held for a command with `redlock run --shared -- COMMAND`; "
          "`redlock acquire` cannot hand one to a later `release` yet");
  if (a.kind == redlock::lock_kind::semaphore)
    usage("--permits: a semaphore permit is held for a command with `redlock run --permits N -- COMMAND`; "
          "`redlock acquire` cannot hand one to a later `release` yet");
  redlock::client client(c.client);
  auto l = acquire_or_explain(client, c, a, vm);
  if (!l) return ex_tempfail;
  print_lock(*l, c.json);
  return 0;
}

int extend_or_release(const std::vector<std::string>& args, bool extend) {
  po::options_description d(extend ? "redlock extend [options]" : "redlock release [options]");
  add_common(d);
  d.add_options()("token", po::value<std::string>(), "the holder's token (default: $REDLOCK_TOKEN)");
  if (extend) d.add_options()("ttl", po::value<std::string>(), "new lease time (default 10s)");
  auto vm = parse(args, d);
  auto c = read_common(vm);
  auto token = token_arg(vm);
  auto ttl = extend ? duration_arg(vm, "ttl", 10s) : 10s;
  redlock::client client(c.client);
  auto l = client.async().adopt(c.name, token, ttl);
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
