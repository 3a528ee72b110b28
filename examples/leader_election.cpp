// SPDX-License-Identifier: Apache-2.0
// Leader election with a renewed lease. Run several copies against the same
// masters: one leads, the others wait; when the leader stops, crashes or loses
// its lease, another takes over.
//
//   example_leader_election URI[,URI...] [--seconds 30] [--name service:leader] [--id NAME]
//
// Each copy loops until --seconds have passed:
//   campaign  acquire the lock with renew = true (the library extends it every
//             ttl * renew_fraction for as long as we hold it);
//   lead      do leader work in steps, only while !lock.lost() and only when
//             the remaining validity covers a whole step; every step's I/O
//             (here a timer standing in for real work) is bound to
//             lock.lost_slot(), so losing the lease cancels it at once;
//   step down when the lease is lost (on_lost / lost_slot fire), stop all
//             leader work and campaign again; at the end, release.
#include <redlock/redlock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <sstream>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct settings {
  redlock::client_options client;
  std::string name = "service:leader";
  std::string id = "pid " + std::to_string(::getpid());
  std::chrono::seconds run_for{30};
};

clock_type::time_point started = clock_type::now();

std::ostream& say(const settings& s) {
  auto t = std::chrono::duration<double>(clock_type::now() - started).count();
  return std::cout << std::fixed << std::setprecision(1) << "[" << std::setw(5) << t << "s " << s.id << "] ";
}

const char* reason(redlock::lost_reason r) {
  switch (r) {
    case redlock::lost_reason::expired: return "expired: no renewal reached a quorum in time";
    case redlock::lost_reason::taken_over: return "taken over: our token is gone from a quorum";
    case redlock::lost_reason::quorum_lost: return "quorum lost: masters unreachable until validity ended";
    case redlock::lost_reason::max_hold: return "max hold: renewal stopped after the cap";
    case redlock::lost_reason::none: break;
  }
  return "none";
}

constexpr auto step_time = 700ms;

// One unit of leader work. Stands in for real I/O (a database call, an RPC):
// bound to the lease's lost_slot, so it is cancelled as soon as the lease is lost.
asio::awaitable<bool> leader_step(const redlock::lock& lease) {
  asio::steady_timer work(co_await asio::this_coro::executor, step_time);
  auto [ec] = co_await work.async_wait(
      asio::bind_cancellation_slot(lease.lost_slot(), asio::as_tuple(asio::use_awaitable)));
  co_return !ec;  // operation_aborted: the lease was lost mid-step
}

asio::awaitable<void> campaign(redlock::async_client& client, const settings& s) {
  auto executor = co_await asio::this_coro::executor;
  const auto deadline = clock_type::now() + s.run_for;
  asio::steady_timer pause(executor);

  while (clock_type::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    if (left < 100ms) break;
    redlock::acquire_options opts{
        .ttl = 3s,
        .wait = std::min<std::chrono::milliseconds>(left, 2s),  // then re-check the deadline
        .retry_delay = 200ms,
        .retry_jitter = 100ms,
        .fenced = true,
        .renew = true,  // extended every ttl / 3 = 1 s while we hold it
        .on_lost = [&s](redlock::lost_reason why) { say(s) << "on_lost: " << reason(why) << "\n"; },
    };
    auto [ec, lease] = co_await client.async_acquire(s.name, opts, asio::as_tuple(asio::use_awaitable));

    if (ec == redlock::errc::not_acquired || ec == redlock::errc::validity_expired) {
      say(s) << "follower: '" << s.name << "' is held elsewhere\n";
      continue;
    }
    if (ec) {  // masters unreachable, auth, ...: back off, then campaign again
      say(s) << "cannot campaign: " << ec.message() << "\n";
      pause.expires_after(1s);
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }

    say(s) << "LEADER (fencing token " << *lease.fence() << ", validity " << lease.remaining_validity().count()
           << " ms)\n";
    int steps = 0;
    while (!lease.lost() && clock_type::now() < deadline) {
      // Check the lease before each step: start only what can finish inside
      // the validity window (renewals push it forward while they succeed).
      if (lease.remaining_validity() < step_time) {
        say(s) << "only " << lease.remaining_validity().count() << " ms of validity left (renewals failing)\n";
        break;
      }
      if (!co_await leader_step(lease)) {
        say(s) << "step " << steps + 1 << " cancelled through lost_slot()\n";
        break;
      }
      // Anything visible outside this process carries the fencing token
      // (*lease.fence()), so storage can refuse it from a deposed leader.
      if (++steps % 3 == 0)
        say(s) << "leader work, step " << steps << ", " << lease.remaining_validity().count()
               << " ms of validity left\n";
    }

    if (clock_type::now() < deadline) {
      // Lost, or about to be: either way we no longer act as the leader.
      say(s) << "STEPPING DOWN after " << steps << " steps ("
             << (lease.lost() ? reason(lease.why_lost()) : "not enough validity") << "); campaigning again\n";
      // A release only deletes our own token where it still exists: harmless,
      // and it clears leftovers on a minority of masters.
      co_await client.async_release(lease, asio::as_tuple(asio::use_awaitable));
      continue;
    }
    auto [rel] = co_await client.async_release(lease, asio::as_tuple(asio::use_awaitable));
    say(s) << "time is up: released the lease (" << (rel ? rel.message() : "ok") << ")\n";
    co_return;
  }
  say(s) << "time is up\n";
}

bool parse(int argc, char** argv, settings& s) {
  if (argc < 2) return false;
  std::stringstream list(argv[1]);
  for (std::string uri; std::getline(list, uri, ',');)
    if (!uri.empty()) s.client.nodes.push_back(uri);
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) return false;
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seconds")
      s.run_for = std::chrono::seconds(std::stoi(value));
    else if (flag == "--name")
      s.name = value;
    else if (flag == "--id")
      s.id = value;
    else
      return false;
  }
  return s.run_for.count() > 0;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (!parse(argc, argv, s)) {
      std::cerr << "usage: " << argv[0] << " URI[,URI...] [--seconds 30] [--name service:leader] [--id NAME]\n";
      return 64;
    }
  } catch (const std::exception&) {
    std::cerr << "--seconds takes a whole number\n";
    return 64;
  }

  // One thread runs everything: the client's strand, the lost_slot signal and
  // the leader's I/O share this io_context, which is what binding an
  // operation to lost_slot() requires.
  asio::io_context io(1);
  try {
    redlock::async_client client(io.get_executor(), s.client);
    int rc = 0;
    asio::co_spawn(io, campaign(client, s), [&](std::exception_ptr e) {
      io.stop();  // the client's connections would otherwise keep run() busy
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::cerr << "failed: " << ex.what() << "\n";
        rc = 1;
      }
    });
    io.run();
    return rc;
  } catch (const redlock::error& e) {  // bad options: named in the message
    std::cerr << "error: " << e.what() << "\n";
    return 64;
  }
}
