/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the liveness runs share (mutex.pml, semaphore.pml, set.pml and
 * rw.pml with LIVENESS; README.md, "Liveness"): a task that may
 * crash at any step, whose clock goes on after, and the room a task that
 * cycles without bound waits for before it sends. Included after
 * release_news.pml (wcur; rw.pml, which has no wake-ups, declares it); the
 * model defines FOREVER(t) (a task that never crashes).
 */
#ifdef LIVENESS
bool dead[NT];           /* task t crashed */
/* Every connection of task t has room for one more request: a task that
   cycles without bound would otherwise fill one and block inside an atomic
   step (README.md, "A trap for the next model"). Each atomic step of a
   task sends at most one request per connection. */
#define ROOM(t) (len(rq[CLIENT_OF(t) * N]) < QCAP && len(rq[CLIENT_OF(t) * N + 1]) < QCAP && \
                 len(rq[CLIENT_OF(t) * N + 2]) < QCAP)
/* Task t crashes (a choice in its selection): it holds nothing from now on,
   hears nothing, and its clock goes on (crashed:, CLOCK_GOES_ON). */
#define TASK_CRASH(t) \
  :: atomic { !FOREVER(t) -> dead[t] = 1; held[t] = 0; wend[t] = 0; wcur[t] = 0 }; \
     goto crashed
/* A crashed task's clock goes on: its keys expire, its wake-list entries
   lapse. One transition (d_step): pan -f takes a process that cannot move
   inside another's atomic sequence for a disabled one, so an endless
   atomic loop here would make every waiter's starvation look fair. */
#define CLOCK_GOES_ON(t) do :: d_step { advance(CLIENT_OF(t), 1) } od
#else
#define ROOM(t) true
#define TASK_CRASH(t)
#endif
