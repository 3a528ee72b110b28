// SPDX-License-Identifier: Apache-2.0
// async_client with asio::use_future: straight-line code that blocks on each
// step when it needs the result, while the I/O runs on a thread of its own.
//   example_future redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003
#include <redlock/redlock.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <iostream>
#include <sstream>
#include <thread>

namespace asio = boost::asio;

// An io_context run by its own thread. future::get() blocks its caller, so it
// must not be called on the thread that completes the operation (it would
// wait for itself): the operations complete on this one.
class io_thread {
 public:
  io_thread() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}
  ~io_thread() {
    io_.stop();
    thread_.join();
  }
  asio::io_context::executor_type executor() { return io_.get_executor(); }

 private:
  asio::io_context io_;
  // Keeps run() from returning while there is no work yet (the client
  // connects only at the first operation).
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
};

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " URI[,URI...]\n";
    return 64;
  }
  redlock::client_options options;
  std::stringstream list(argv[1]);
  for (std::string uri; std::getline(list, uri, ',');) options.nodes.push_back(uri);

  io_thread io;  // declared first: it outlives the client, whose connections run on it
  try {
    redlock::async_client client(io.executor(), options);
    redlock::acquire_options opts{.ttl = 10s, .wait = 5s};  // keep trying for up to 5 s
    std::future<redlock::lock> acquiring = client.async_acquire("reports:weekly", opts, asio::use_future);
    // This thread is free while the masters are asked; get() waits for the answer.
    redlock::lock l = acquiring.get();
    std::cout << "acquired, " << l.remaining_validity().count() << " ms of validity\n";

    // The critical section: before each side effect, check that validity remains.
    for (int step = 0; step < 3 && l.remaining_validity() > 1s; ++step) {
      std::cout << "  step " << step << "\n";
      std::this_thread::sleep_for(100ms);
    }

    client.async_release(l, asio::use_future).get();
    std::cout << "released\n";
  } catch (const boost::system::system_error& e) {
    // get() rethrows a failed operation as boost::system::system_error (the
    // client's constructor throws redlock::error, which is one too).
    if (e.code() == redlock::errc::not_acquired) {
      std::cerr << "not acquired within 5 s: someone else holds it\n";
      return 75;
    }
    std::cerr << "failed: " << e.what() << "\n";
    return 1;
  }
}
