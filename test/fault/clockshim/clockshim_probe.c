// SPDX-License-Identifier: Apache-2.0
/* clockshim_probe <sleep_ms>: prints the clocks the shim overrides, sleeps
 * (a real nanosleep), and prints them again; used by test_clockshim.cpp with
 * LD_PRELOAD=<redlock_clockshim>. Each line, in milliseconds (time() in s):
 *   realtime monotonic monotonic_coarse gettimeofday realtime_coarse time
 * Built without sanitizers (it must accept the shim as the first preload). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static double ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sample(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  double rt = ms(CLOCK_REALTIME), mono = ms(CLOCK_MONOTONIC), monoc = ms(CLOCK_MONOTONIC_COARSE);
  double tod = (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
  double rtc = ms(CLOCK_REALTIME_COARSE);
  printf("%.3f %.3f %.3f %.3f %.3f %lld\n", rt, mono, monoc, tod, rtc, (long long)time(NULL));
  fflush(stdout);
}

int main(int argc, char** argv) {
  long sleep_ms = argc > 1 ? atol(argv[1]) : 100;
  sample();
  struct timespec d = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0) {
  }
  sample();
  return 0;
}
