// SPDX-License-Identifier: Apache-2.0
// `redlock status`: each master's view of one lock, read-only, as text or
// JSON; exits 0 whenever it could ask.
#include "commands.hpp"
#include "lock_args.hpp"

#include <boost/json.hpp>

#include <future>
#include <iostream>

namespace redlock::cli {

namespace po = boost::program_options;
namespace json = boost::json;

int status(const std::vector<std::string>& args) {
  po::options_description d("redlock status [options]");
  add_common(d);
  auto vm = parse(args, d);
  auto c = read_common(vm);
  redlock::client client(c.client);
  std::promise<std::vector<redlock::node_lock_view>> p;
  auto f = p.get_future();
  client.async().async_status(c.name, [&p](boost::system::error_code, std::vector<redlock::node_lock_view> s) {
    p.set_value(std::move(s));
  });
  auto nodes = f.get();
  if (c.json) {
    json::array a;
    for (auto& n : nodes) {
      json::object o{{"node", n.node}, {"ok", !n.error}};
      if (n.error) {
        o["error"] = n.error.message();
        a.push_back(std::move(o));
        continue;
      }
      o["holds"] = redlock::key_content_name(n.content);
      if (n.content == redlock::key_content::mutex) o["token"] = n.token;
      if (n.content == redlock::key_content::foreign) o["type"] = n.foreign_type;
      if (n.content == redlock::key_content::reentrant || n.content == redlock::key_content::rwlock) {
        json::array owners;
        for (auto& h : n.owners) owners.push_back(json::object{{"owner", h.owner}, {"count", h.count}});
        o["owners"] = std::move(owners);
      }
      if (n.content == redlock::key_content::semaphore) {
        if (n.permits) o["permits"] = *n.permits;
        json::array held;
        for (auto& h : n.permit_holds) {
          json::object p{{"permit", h.permit}, {"token", h.token}, {"pttl_ms", h.pttl.count()}};
          if (h.fence) p["fence"] = *h.fence;
          if (!h.description.empty()) p["description"] = h.description;
          held.push_back(std::move(p));
        }
        o["held"] = std::move(held);
      }
      o["pttl_ms"] = n.pttl.count();
      if (n.fence) o["fence"] = *n.fence;
      if (!n.waiters.empty()) o["waiters"] = json::array(n.waiters.begin(), n.waiters.end());
      if (!n.description.empty()) o["description"] = n.description;
      a.push_back(std::move(o));
    }
    std::cout << json::serialize(json::object{{"name", c.name}, {"nodes", std::move(a)}}) << "\n";
    return 0;
  }
  std::cout << "lock '" << c.name << "' on " << nodes.size() << " masters:\n";
  for (auto& n : nodes) {
    std::cout << "  " << n.node << "  ";
    if (n.error) {
      std::cout << "unreachable: " << n.error.message() << "\n";
      continue;
    }
    switch (n.content) {
      case redlock::key_content::free: std::cout << "free"; break;
      case redlock::key_content::mutex:
        std::cout << "held by " << n.token << ", pttl " << n.pttl.count() << " ms";
        break;
      case redlock::key_content::reentrant:
        std::cout << "held by";
        for (auto& h : n.owners) std::cout << " " << h.owner << " (entered " << h.count << "x)";
        std::cout << ", pttl " << n.pttl.count() << " ms";
        break;
      case redlock::key_content::foreign: std::cout << "key holds a " << n.foreign_type << " (not a lock)"; break;
      case redlock::key_content::rwlock:
        std::cout << "read-write lock held by";
        for (auto& h : n.owners) std::cout << " " << (h.owner.starts_with("w:") ? "writer " : "reader ") << h.owner.substr(2);
        std::cout << ", pttl " << n.pttl.count() << " ms";
        break;
      case redlock::key_content::semaphore:
        std::cout << "semaphore of " << (n.permits ? std::to_string(*n.permits) : std::string("?")) << " permits, "
                  << n.permit_holds.size() << " held";
        for (auto& h : n.permit_holds) {
          std::cout << "\n    permit " << h.permit << ": held by " << h.token << ", pttl " << h.pttl.count() << " ms";
          if (!h.description.empty()) std::cout << " (\"" << h.description << "\")";
          if (h.fence) std::cout << ", fence " << *h.fence;
        }
        std::cout << "\n";
        continue;
    }
    // Quoted: it is whatever the holder wrote (no control characters).
    if (!n.description.empty()) std::cout << " (\"" << n.description << "\")";
    std::cout << ", fence " << (n.fence ? std::to_string(*n.fence) : std::string("-"));
    if (!n.waiters.empty()) {
      std::cout << ", queue";
      for (auto& w : n.waiters) std::cout << " " << w;
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace redlock::cli
