// SPDX-License-Identifier: Apache-2.0
/* redlock_clockshim: an LD_PRELOAD library that shifts and scales the clocks
 * of the process it is loaded into (meant for redis-server), so that a
 * master's keys expire early or late.
 *
 * Overrides clock_gettime (CLOCK_REALTIME, CLOCK_MONOTONIC and their _COARSE
 * variants; other clocks pass through), gettimeofday and time. Redis 7.0
 * expires keys by mstime()/ustime() (gettimeofday) and runs its timers on
 * getMonotonicUs() (clock_gettime(CLOCK_MONOTONIC)); both move.
 *
 * Control: the environment variable REDLOCK_CLOCKSHIM_FILE names a file that
 * holds one line
 *     <offset_ms> <rate> [<mono_mode>]
 * e.g. "5000 1.0" or "0 4.0 1". The file is re-read at most every 2 ms (on a
 * clock call), so a test can change it while the server runs; write it
 * atomically (temp file + rename, see clock_control.hpp). A missing or
 * unparsable file keeps the previous setting (initially: 0 1, identity).
 *
 * Semantics: the fake clock is piecewise linear and continuous except for
 * offset changes. With D = fake - real: at start D = offset; between changes D
 * grows at (rate - 1) per unit of real time; when the file changes at real
 * time t, D jumps by (new offset - old offset) and then grows at the new rate.
 * So a constant rate 1 gives fake = real + offset, and "0 4.0" makes time run
 * four times as fast from the moment it was written.
 *   mono_mode 1 (default): the monotonic clocks follow the rate but not the
 *                offset jumps (an NTP step of the wall clock on a drifting
 *                oscillator). Key expiry only depends on the wall clock.
 *   mono_mode 2: the monotonic clocks get the same jumps and rate; they
 *                never go backwards, so a backward jump STALLS them until the
 *                shifted time catches up -- redis then runs no serverCron
 *                (no active expiry, SIGTERM is not acted upon) meanwhile.
 *   mono_mode 0: the monotonic clocks are untouched.
 *
 * Constraints: the real time comes from the raw syscall, never from dlsym or
 * the vDSO (libfaketime's dlsym allocates, which hangs jemalloc-linked
 * redis-server); the shim never allocates, never takes a blocking lock, and
 * preserves errno; readers never wait (signal-handler safe). Never build it
 * with sanitizers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define SHIM_API __attribute__((visibility("default")))
#define SHIM_ENV "REDLOCK_CLOCKSHIM_FILE"
#define NS_PER_SEC 1000000000LL
#define POLL_NS (2LL * 1000000LL)
#define RATE_ONE 1000000000LL /* rates are stored in units of 1e-9 */

/* ---- raw clock ----------------------------------------------------------- */

static int raw_clock(clockid_t id, struct timespec* ts) {
  return (int)syscall(SYS_clock_gettime, id, ts);
}

static int64_t ts_ns(const struct timespec* ts) {
  return (int64_t)ts->tv_sec * NS_PER_SEC + ts->tv_nsec;
}

static void ns_ts(int64_t ns, struct timespec* ts) {
  int64_t s = ns / NS_PER_SEC, r = ns % NS_PER_SEC;
  if (r < 0) {
    r += NS_PER_SEC;
    s -= 1;
  }
  ts->tv_sec = (time_t)s;
  ts->tv_nsec = (long)r;
}

static int64_t raw_ns(clockid_t id) {
  struct timespec ts;
  if (raw_clock(id, &ts) != 0) return 0;
  return ts_ns(&ts);
}

/* ---- parameters ----------------------------------------------------------
 * Two slots and a generation counter: the writer (one at a time, under
 * g_reloading) fills the inactive slot and then publishes it by bumping the
 * generation; readers never wait (a reader in a signal handler that interrupts
 * the writer reads the active slot, which is not being written) and retry
 * only if a publish happened while they were reading. */

struct params {
  int64_t anchor_real, anchor_mono; /* raw clocks at the last change */
  int64_t shift_real, shift_mono;   /* fake - real at the anchors */
  int64_t rate_real, rate_mono;     /* in units of 1e-9 */
};

enum { F_ANCHOR_REAL, F_ANCHOR_MONO, F_SHIFT_REAL, F_SHIFT_MONO, F_RATE_REAL, F_RATE_MONO, F_COUNT };

static atomic_uint g_gen;
static _Atomic int64_t g_slot[2][F_COUNT] = {
    {0, 0, 0, 0, RATE_ONE, RATE_ONE},
    {0, 0, 0, 0, RATE_ONE, RATE_ONE},
};

static void params_read(struct params* p) {
  for (;;) {
    unsigned g = atomic_load_explicit(&g_gen, memory_order_acquire);
    _Atomic int64_t* s = g_slot[g & 1u];
    p->anchor_real = atomic_load_explicit(&s[F_ANCHOR_REAL], memory_order_relaxed);
    p->anchor_mono = atomic_load_explicit(&s[F_ANCHOR_MONO], memory_order_relaxed);
    p->shift_real = atomic_load_explicit(&s[F_SHIFT_REAL], memory_order_relaxed);
    p->shift_mono = atomic_load_explicit(&s[F_SHIFT_MONO], memory_order_relaxed);
    p->rate_real = atomic_load_explicit(&s[F_RATE_REAL], memory_order_relaxed);
    p->rate_mono = atomic_load_explicit(&s[F_RATE_MONO], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&g_gen, memory_order_relaxed) == g) return;
  }
}

static void params_write(const struct params* p) {
  unsigned g = atomic_load_explicit(&g_gen, memory_order_relaxed);
  _Atomic int64_t* s = g_slot[(g + 1u) & 1u];
  atomic_thread_fence(memory_order_release); /* readers of these stores see g_gen >= g */
  atomic_store_explicit(&s[F_ANCHOR_REAL], p->anchor_real, memory_order_relaxed);
  atomic_store_explicit(&s[F_ANCHOR_MONO], p->anchor_mono, memory_order_relaxed);
  atomic_store_explicit(&s[F_SHIFT_REAL], p->shift_real, memory_order_relaxed);
  atomic_store_explicit(&s[F_SHIFT_MONO], p->shift_mono, memory_order_relaxed);
  atomic_store_explicit(&s[F_RATE_REAL], p->rate_real, memory_order_relaxed);
  atomic_store_explicit(&s[F_RATE_MONO], p->rate_mono, memory_order_relaxed);
  atomic_store_explicit(&g_gen, g + 1u, memory_order_release);
}

/* D = fake - real at raw time `now` of a clock anchored at `anchor`. */
static int64_t deviation(int64_t now, int64_t anchor, int64_t shift, int64_t rate) {
  if (rate == RATE_ONE) return shift;
  double drift = (double)(now - anchor) * ((double)(rate - RATE_ONE) / (double)RATE_ONE);
  return shift + (int64_t)drift;
}

/* ---- the control file ------------------------------------------------------ */

static char g_path[4096];
static atomic_int g_init;          /* 0: not yet, 1: in progress, 2: done */
static atomic_flag g_reloading = ATOMIC_FLAG_INIT;
static _Atomic int64_t g_next_check_real, g_next_check_mono;
/* The file's values currently in force (touched only under g_reloading). */
static int64_t g_offset_ns;
static int64_t g_rate = RATE_ONE;
static int g_mode = 1;

/* Parses [+-]digits[.digits] into units of 10^-9 (so "1.5" -> 1500000000). */
static int parse_fixed(const char** s, int64_t* out) {
  const char* p = *s;
  while (*p == ' ' || *p == '\t') ++p;
  int neg = 0;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if ((*p < '0' || *p > '9') && *p != '.') return 0;
  int64_t ip = 0, fp = 0, scale = NS_PER_SEC;
  int digits = 0;
  for (; *p >= '0' && *p <= '9'; ++p, ++digits) {
    if (ip > (INT64_MAX / NS_PER_SEC) / 10) return 0; /* overflow */
    ip = ip * 10 + (*p - '0');
  }
  if (*p == '.') {
    for (++p; *p >= '0' && *p <= '9'; ++p, ++digits) {
      if (scale > 1) {
        scale /= 10;
        fp += (*p - '0') * scale;
      }
    }
  }
  if (!digits) return 0;
  int64_t v = ip * NS_PER_SEC + fp;
  *out = neg ? -v : v;
  *s = p;
  return 1;
}

/* Reads the file; returns 1 and the values if it holds a valid setting. */
static int read_file(int64_t* offset_ns, int64_t* rate, int* mode) {
  char buf[256];
  long fd = syscall(SYS_openat, AT_FDCWD, g_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  long n = syscall(SYS_read, (int)fd, buf, sizeof buf - 1);
  syscall(SYS_close, (int)fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = buf;
  int64_t off_ms_e9, rate_e9, mode_e9 = NS_PER_SEC;
  if (!parse_fixed(&p, &off_ms_e9) || !parse_fixed(&p, &rate_e9)) return 0;
  const char* q = p;
  if (parse_fixed(&q, &mode_e9)) p = q;
  if (rate_e9 < 0) return 0;
  if (mode_e9 != 0 && mode_e9 != NS_PER_SEC && mode_e9 != 2 * NS_PER_SEC) return 0;
  *offset_ns = off_ms_e9 / 1000; /* ms * 1e9 -> ns */
  *rate = rate_e9;
  *mode = (int)(mode_e9 / NS_PER_SEC);
  return 1;
}

/* Called with g_reloading held. */
static void reload(void) {
  int64_t offset_ns, rate;
  int mode;
  if (!read_file(&offset_ns, &rate, &mode)) return;
  if (offset_ns == g_offset_ns && rate == g_rate && mode == g_mode) return;
  struct params p;
  params_read(&p);
  int64_t now_real = raw_ns(CLOCK_REALTIME), now_mono = raw_ns(CLOCK_MONOTONIC);
  int64_t d_real = deviation(now_real, p.anchor_real, p.shift_real, p.rate_real);
  int64_t d_mono = deviation(now_mono, p.anchor_mono, p.shift_mono, p.rate_mono);
  struct params n;
  n.anchor_real = now_real;
  n.anchor_mono = now_mono;
  n.shift_real = d_real + (offset_ns - g_offset_ns);
  n.rate_real = rate;
  if (mode == 0) {
    n.shift_mono = 0;
    n.rate_mono = RATE_ONE;
  } else {
    int64_t old_mono_off = g_mode == 2 ? g_offset_ns : 0;
    int64_t new_mono_off = mode == 2 ? offset_ns : 0;
    n.shift_mono = (g_mode == 0 ? 0 : d_mono) + (new_mono_off - old_mono_off);
    n.rate_mono = rate;
  }
  params_write(&n);
  g_offset_ns = offset_ns;
  g_rate = rate;
  g_mode = mode;
}

static void try_reload(int64_t now_real, int64_t now_mono) {
  if (atomic_load_explicit(&g_init, memory_order_acquire) != 2 || !g_path[0]) return;
  if (atomic_flag_test_and_set_explicit(&g_reloading, memory_order_acquire)) return;
  int saved = errno;
  if (!now_real) now_real = raw_ns(CLOCK_REALTIME);
  if (!now_mono) now_mono = raw_ns(CLOCK_MONOTONIC);
  atomic_store_explicit(&g_next_check_real, now_real + POLL_NS, memory_order_relaxed);
  atomic_store_explicit(&g_next_check_mono, now_mono + POLL_NS, memory_order_relaxed);
  reload();
  errno = saved;
  atomic_flag_clear_explicit(&g_reloading, memory_order_release);
}

static void shim_init(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&g_init, &expected, 1)) return;
  const char* p = getenv(SHIM_ENV);
  if (p && strlen(p) < sizeof g_path) memcpy(g_path, p, strlen(p) + 1);
  atomic_store_explicit(&g_init, 2, memory_order_release);
  try_reload(0, 0);
}

/* Copy the path early: redis's setproctitle later overwrites the environment. */
__attribute__((constructor)) static void shim_constructor(void) { shim_init(); }

/* ---- the fake clocks ------------------------------------------------------- */

static _Atomic int64_t g_last_mono, g_last_mono_coarse;

/* Monotonic clocks never go backwards across threads. */
static int64_t clamp_up(_Atomic int64_t* last, int64_t v) {
  int64_t cur = atomic_load_explicit(last, memory_order_relaxed);
  while (v > cur) {
    if (atomic_compare_exchange_weak_explicit(last, &cur, v, memory_order_relaxed,
                                              memory_order_relaxed))
      return v;
  }
  return cur;
}

/* The fake value of a realtime (is_mono 0) or monotonic (1) raw reading. */
static int64_t fake_ns(int is_mono, int64_t now) {
  if (atomic_load_explicit(&g_init, memory_order_acquire) != 2) shim_init();
  _Atomic int64_t* next = is_mono ? &g_next_check_mono : &g_next_check_real;
  if (now >= atomic_load_explicit(next, memory_order_relaxed)) {
    try_reload(is_mono ? 0 : now, is_mono ? now : 0);
  }
  struct params p;
  params_read(&p);
  if (is_mono) return now + deviation(now, p.anchor_mono, p.shift_mono, p.rate_mono);
  return now + deviation(now, p.anchor_real, p.shift_real, p.rate_real);
}

SHIM_API int clock_gettime(clockid_t id, struct timespec* ts) {
  int r = raw_clock(id, ts);
  if (r != 0) return r;
  switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
      ns_ts(fake_ns(0, ts_ns(ts)), ts);
      break;
    case CLOCK_MONOTONIC:
      ns_ts(clamp_up(&g_last_mono, fake_ns(1, ts_ns(ts))), ts);
      break;
    case CLOCK_MONOTONIC_COARSE:
      ns_ts(clamp_up(&g_last_mono_coarse, fake_ns(1, ts_ns(ts))), ts);
      break;
    default:
      break;
  }
  return 0;
}

SHIM_API int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
  if (tz) memset(tz, 0, sizeof(struct timezone));
  struct timespec ts;
  if (raw_clock(CLOCK_REALTIME, &ts) != 0) return -1;
  ns_ts(fake_ns(0, ts_ns(&ts)), &ts);
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

SHIM_API time_t time(time_t* out) {
  struct timespec ts;
  if (raw_clock(CLOCK_REALTIME_COARSE, &ts) != 0) return (time_t)-1;
  ns_ts(fake_ns(0, ts_ns(&ts)), &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
