/* SPDX-License-Identifier: Apache-2.0 */
/* LD_PRELOAD shim for the CLI tests: reports a call to setenv() made in the
 * child of fork() before it execs. That child may run only async-signal-safe
 * code (another thread may have held the malloc lock at the fork); setenv
 * allocates. The child exits 86 with a message on standard error instead.
 * redlock starts COMMAND with fork() (to set PR_SET_PDEATHSIG in the child),
 * so its child is flagged and checked here; a posix_spawn (clone with
 * CLONE_VFORK) would run no fork handlers and go unchecked. An exec'd
 * program loads the shim afresh, unflagged. Only setenv is caught: a check
 * on malloc would also trip the commands' own (single-threaded, safe) forks. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int in_forked_child = 0;

static void mark_forked_child(void) { in_forked_child = 1; }

__attribute__((constructor)) static void install_fork_guard(void) {
  pthread_atfork(NULL, NULL, mark_forked_child);
}

__attribute__((visibility("default"))) int setenv(const char* name, const char* value, int overwrite) {
  if (in_forked_child) {
    static const char message[] = "fork_guard: setenv() in a forked child before exec\n";
    ssize_t ignored = write(2, message, sizeof message - 1);
    (void)ignored;
    _exit(86);
  }
  int (*real_setenv)(const char*, const char*, int) =
      (int (*)(const char*, const char*, int))dlsym(RTLD_NEXT, "setenv");
  return real_setenv(name, value, overwrite);
}
