// SPDX-License-Identifier: Apache-2.0
// Test-side control of redlock_clockshim (clockshim.c), the LD_PRELOAD
// library that shifts and scales a redis-server's clocks.
//
//   redlock::fault::clock_control clock(dir / "clock");     // writes "0 1" (identity)
//   redlock::testing::redis_options o;
//   o.preload = REDLOCK_CLOCKSHIM_PATH;                        // from CMake
//   o.extra_env = {clock.env()};
//   redlock::testing::redis_process server(o);
//   clock.set_rate(4.0);              // server time now runs 4x as fast
//   clock.set_offset(std::chrono::seconds(5));  // and jumps 5 s ahead
//
// The file holds "<offset_ms> <rate> <mono_mode>"; see clockshim.c for the
// exact semantics (offset changes are jumps, rate changes are continuous).
// The shim re-reads the file at most every poll_interval, on the server's next
// clock read, so allow a few ms (e.g. 20 ms) before relying on a change.
// Writes are atomic (temp file + rename): the shim never sees half a file.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unistd.h>

namespace redlock::fault {

// The environment variable through which the shim finds its control file.
inline constexpr const char* clockshim_env_var = "REDLOCK_CLOCKSHIM_FILE";

// How the monotonic clocks (CLOCK_MONOTONIC[_COARSE]) follow the setting.
// Key expiry in redis depends on the wall clock only; the monotonic clock
// drives redis's timers (serverCron).
enum class mono_mode : int {
  untouched = 0,  // monotonic clocks are not shifted
  rate_only = 1,  // default: they follow the rate, not the offset jumps (an NTP step)
  follow = 2,     // they follow rate and jumps; never going backwards, so a
                  // backward jump stalls redis's timers until time catches up
};

// Atomically replaces `file` with "<offset_ms> <rate> <mode>\n".
inline void write_clock_file(const std::filesystem::path& file, double offset_ms, double rate,
                             mono_mode mode = mono_mode::rate_only) {
  if (rate < 0) throw std::invalid_argument("write_clock_file: negative rate");
  static std::atomic<unsigned> counter{0};
  auto tmp = file;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  char line[96];
  std::snprintf(line, sizeof line, "%.3f %.9f %d\n", offset_ms, rate, static_cast<int>(mode));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << line;
    out.close();
    if (!out) throw std::runtime_error("write_clock_file: cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error("write_clock_file: cannot rename onto " + file.string());
  }
}

// Owns one control file (not deleted on destruction: the server may outlive us).
class clock_control {
 public:
  // The longest the shim waits before it notices a new setting (plus the time
  // until the server next reads a clock).
  static constexpr std::chrono::milliseconds poll_interval{2};

  // Writes the identity setting (offset 0, rate 1, mono_mode::rate_only).
  explicit clock_control(std::filesystem::path file) : file_(std::move(file)) { write(); }

  // Sets both: the offset is absolute (the server's clock jumps by the
  // difference to the previous offset); the rate applies from now on.
  void set(std::chrono::milliseconds offset, double rate, mono_mode mode = mono_mode::rate_only) {
    offset_ = offset;
    rate_ = rate;
    mode_ = mode;
    write();
  }
  void set_offset(std::chrono::milliseconds offset) { set(offset, rate_, mode_); }
  void set_rate(double rate) { set(offset_, rate, mode_); }
  void reset() { set(std::chrono::milliseconds{0}, 1.0, mono_mode::rate_only); }  // jumps back

  std::chrono::milliseconds offset() const { return offset_; }
  double rate() const { return rate_; }
  const std::filesystem::path& file() const { return file_; }
  // "REDLOCK_CLOCKSHIM_FILE=<file>", for redlock::testing::redis_options::extra_env.
  std::string env() const { return std::string(clockshim_env_var) + "=" + file_.string(); }

 private:
  void write() { write_clock_file(file_, static_cast<double>(offset_.count()), rate_, mode_); }

  std::filesystem::path file_;
  std::chrono::milliseconds offset_{0};
  double rate_ = 1.0;
  mono_mode mode_ = mono_mode::rate_only;
};

}  // namespace redlock::fault
