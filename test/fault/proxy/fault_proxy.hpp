// SPDX-License-Identifier: Apache-2.0
// A TCP fault proxy for the fault-injection suite: one proxy in front of one
// redis master. Clients connect to 127.0.0.1:port(); every connection is
// forwarded to 127.0.0.1:upstream_port over a fresh upstream connection, and
// the bytes of each direction go through a pipe that can delay, throttle,
// slice, hold, cut or reset them.
//
// Threading: the proxy runs its own io_context on its own thread. Every public
// member function is thread-safe and may be called from any thread; setters
// are synchronous: when a setter returns, the new setting is in force for
// every byte the proxy reads afterwards (and, where stated, for connections
// that already exist).
//
// Probabilities: every fault takes a probability in [0, 1] (clamped), drawn
// from one std::mt19937_64 seeded by the test (constructor or reseed()), so a
// run with the same seed and the same event order draws the same faults.
// A probability <= 0 disables the fault. Draws are made
//   per chunk      (a chunk = one read from the source socket): latency,
//                  bandwidth, slicing, blackhole;
//   per connection (at accept, and for live connections when the setter is
//                  called): reset, close-after-bytes; slow close is drawn per
//                  connection when its source reaches EOF.
// Byte order within a direction is always preserved (one FIFO per direction).
//
// Fault semantics, per direction d (client_to_server: the client's bytes
// on their way to redis; server_to_client: redis's replies):
//   latency      each chunk is released `latency +/- uniform(jitter)` (>= 0)
//                after it was read.
//   bandwidth    the chunk is paced to `bytes_per_second`.
//   slicing      the chunk is written in pieces of `piece_bytes`, waiting
//                `delay` between pieces.
//   blackhole    the pipe stops forwarding (data is held in the proxy, the
//                source is still read up to a cap, then backpressured; EOF is
//                held too). Once drawn, a pipe stays held until the blackhole
//                of d is disabled or heal() is called: then the held bytes are
//                delivered, late, in order (like a healed partition; use a
//                reset if the connection should die instead).
//   reset        the destination socket of d is aborted with RST (SO_LINGER 0)
//                `after` ms after accept (or after the setter call, for live
//                connections); the other socket is closed with FIN, or also
//                aborted when the reset of the other direction is pending too
//                (so direction::both resets both sides).
//   slow close   when the source of d reaches EOF, the FIN is propagated to
//                the destination `delay` ms after the queued data is flushed.
//   close after  after `bytes` more bytes were forwarded in direction d the
//                whole connection is closed (FIN both ways).
// set_down(true) closes the listener (new connections get ECONNREFUSED) and
// aborts (RST) every live connection; set_down(false) listens again on the
// same port. An upstream that refuses the connection makes the proxy reset
// the client connection.
//
// heal() disables every fault, brings the proxy up, releases held pipes,
// cancels pending resets, budgets and slow closes (pending FINs are sent at
// once); chunks already scheduled by latency keep their release time.
//
// Destruction aborts every connection and joins the thread; it does not wait
// for held or delayed data.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace redlock::fault {

enum class direction {
  client_to_server,
  server_to_client,
  both,  // setters only: apply to both directions
};

// A snapshot of the proxy's counters (monotonic since construction).
struct proxy_stats {
  std::uint64_t connections_accepted = 0;  // client connections accepted while up
  std::uint64_t upstream_failures = 0;     // upstream connect failed (client was reset)
  std::uint64_t open_connections = 0;      // live sessions right now
  std::uint64_t bytes_client_to_server = 0;  // bytes written to the upstream
  std::uint64_t bytes_server_to_client = 0;  // bytes written to clients
  // Fault applications, by kind, and their sum.
  std::uint64_t delayed_chunks = 0;      // latency drawn for a chunk
  std::uint64_t throttled_chunks = 0;    // bandwidth limit drawn for a chunk
  std::uint64_t sliced_chunks = 0;       // slicing drawn for a chunk
  std::uint64_t blackholed_pipes = 0;    // a pipe started holding its data
  std::uint64_t resets = 0;              // connections aborted by the reset fault
  std::uint64_t slow_closes = 0;         // FINs delayed
  std::uint64_t closes_after_bytes = 0;  // connections closed by close-after-bytes
  std::uint64_t dropped_by_down = 0;     // live connections aborted by set_down(true)
  std::uint64_t faults_applied = 0;      // sum of the eight counters above
  // What the faults did to traffic a client was waiting on (the suite's
  // "acted"): chunks read into (or already queued in) a held pipe, and
  // connections aborted (reset fault, reset_now, set_down) while a request
  // had no reply yet or bytes were still queued.
  std::uint64_t held_chunks = 0;
  std::uint64_t resets_pending = 0;
};

struct proxy_session;  // implementation detail (fault_proxy.cpp)

class fault_proxy {
 public:
  using duration = std::chrono::milliseconds;

  // Listens on 127.0.0.1 on a free port and forwards to
  // 127.0.0.1:upstream_port. `seed` seeds the fault RNG.
  explicit fault_proxy(std::uint16_t upstream_port, std::uint64_t seed = 0);
  ~fault_proxy();
  fault_proxy(const fault_proxy&) = delete;
  fault_proxy& operator=(const fault_proxy&) = delete;

  std::uint16_t port() const noexcept;           // the proxy's listening port
  std::uint16_t upstream_port() const noexcept;  // where it forwards
  std::string uri() const;                       // "redis://127.0.0.1:<port()>"

  // Per-direction faults (see the semantics above). Each call replaces the
  // previous setting of that fault for `d`; probability <= 0 disables it.
  void set_latency(direction d, duration latency, duration jitter = duration{0},
                   double probability = 1.0);
  void set_bandwidth(direction d, std::uint64_t bytes_per_second, double probability = 1.0);
  void set_slicing(direction d, std::size_t piece_bytes, duration delay,
                   double probability = 1.0);
  // Applies to live pipes at once (one draw each) and to every later chunk.
  void set_blackhole(direction d, double probability = 1.0);
  // Persistent: every live connection (one draw each, timer from now) and
  // every later connection (timer from accept). `after` 0 = immediately.
  void set_reset(direction d, duration after = duration{0}, double probability = 1.0);
  // One shot: aborts live connections now (one draw each); later ones are untouched.
  void reset_now(direction d = direction::both, double probability = 1.0);
  void set_slow_close(direction d, duration delay, double probability = 1.0);
  // Persistent: live connections (budget counted from now) and later ones.
  void set_close_after(direction d, std::uint64_t bytes, double probability = 1.0);

  // Down: refuse new connections and abort live ones. Up again: listen on the
  // same port (throws std::runtime_error if the port was taken meanwhile).
  void set_down(bool down);
  bool down() const;

  void heal();                       // clears every fault and brings the proxy up
  void reseed(std::uint64_t seed);   // reseeds the fault RNG
  proxy_stats stats() const;

 private:
  friend struct proxy_session;
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace redlock::fault
