// SPDX-License-Identifier: Apache-2.0
// The span hook (observer::on_span) wired to a "tracer" that prints each
// span as one line of OTLP/JSON (the shape an OpenTelemetry collector's file
// exporter writes, and its OTLP/HTTP receiver accepts). With the
// OpenTelemetry C++ SDK, on_span would instead start a span at s.start and
// end it s.duration later, with the same attributes.
//   example_spans_otel_log redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003
#include <redlock/redlock.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>

namespace {

std::string json_string(std::string_view in) {
  std::string out = "\"";
  for (char c : in) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string attribute(std::string_view key, std::string_view value) {
  return "{\"key\":" + json_string(key) + ",\"value\":{\"stringValue\":" + json_string(value) + "}}";
}
// OTLP/JSON carries 64-bit integers as strings.
std::string attribute(std::string_view key, unsigned value) {
  return "{\"key\":" + json_string(key) + ",\"value\":{\"intValue\":\"" + std::to_string(value) + "\"}}";
}

std::string_view span_name(redlock::span_kind what) {
  switch (what) {
    case redlock::span_kind::acquire: return "redlock.acquire";
    case redlock::span_kind::hold: return "redlock.hold";
    case redlock::span_kind::extend: return "redlock.extend";
    case redlock::span_kind::release: return "redlock.release";
  }
  return "redlock";
}

class otel_log_tracer : public redlock::observer {
 public:
  // Runs on the client's strand: format, write one line, return.
  void on_span(const redlock::span& s) override {
    using namespace std::chrono;
    auto start = duration_cast<nanoseconds>(s.start.time_since_epoch()).count();
    auto end = start + duration_cast<nanoseconds>(s.duration).count();
    // A hold that ended other than by its release, or an operation that
    // failed, is an error span.
    bool ok = s.outcome == "ok" || s.outcome == "released";
    std::string attributes = attribute("redlock.name", s.name) + "," +
                             attribute("redlock.kind", redlock::to_string(s.kind)) + "," +
                             attribute("redlock.outcome", s.outcome) + "," + attribute("redlock.masters", s.masters) +
                             "," + attribute("redlock.masters.answered", s.answered) + "," +
                             attribute("redlock.masters.granted", s.granted);
    if (s.what == redlock::span_kind::acquire) attributes += "," + attribute("redlock.attempts", s.attempts);
    std::lock_guard lock(mutex_);
    std::cout << R"({"resourceSpans":[{"resource":{"attributes":[)" << attribute("service.name", "redlock-example")
              << R"(]},"scopeSpans":[{"scope":{"name":"redlock"},"spans":[{"traceId":")" << hex_id(16)
              << R"(","spanId":")" << hex_id(8) << R"(","name":)" << json_string(span_name(s.what))
              << R"(,"kind":1,"startTimeUnixNano":")" << start << R"(","endTimeUnixNano":")" << end
              << R"(","attributes":[)" << attributes << R"(],"status":{"code":)" << (ok ? 1 : 2)
              << (ok ? std::string() : ",\"message\":" + json_string(s.outcome)) << "}}]}]}]}\n"
              << std::flush;
  }

 private:
  // Each span its own trace here: the hook runs on the client's strand, not
  // in the caller's context, so an application that wants a lock's spans
  // under its request's trace keeps that trace itself (by lock name).
  std::string hex_id(int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) {
      char two[3];
      std::snprintf(two, sizeof two, "%02x", static_cast<unsigned>(rng_() & 0xff));
      out += two;
    }
    return out;
  }
  std::mutex mutex_;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " URI[,URI...]\n";
    return 64;
  }
  redlock::client_options options;
  std::stringstream list(argv[1]);
  for (std::string uri; std::getline(list, uri, ',');) options.nodes.push_back(uri);
  options.observer = std::make_shared<otel_log_tracer>();

  try {
    redlock::client client(options), rival(options);
    auto l = client.acquire("reports:nightly", {.ttl = 10s, .wait = 5s});  // redlock.acquire
    client.extend(l, 10s);                                                  // redlock.extend
    // Refused while held: an acquire span with status ERROR (not_acquired).
    if (rival.try_acquire("reports:nightly", {.max_attempts = 1})) return 70;
    client.release(l);  // redlock.hold (released), then redlock.release
  } catch (const redlock::error& e) {
    std::cerr << e.what() << "\n";
    return 75;
  }
}
