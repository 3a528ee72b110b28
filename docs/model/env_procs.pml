/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The masters and the faults, for every model (docs/model/README.md, "The
 * environment"). Included after the model's run_script(m) and forget(m).
 */

/* Master m runs one request at a time, each whole script one atomic step
   on its state (Redis runs a script atomically), from any of its
   connections, each in its order; the answer is recorded in the same step.
   A request from a dropped connection (stale) still runs, later, and
   nobody reads its answer. (atomic, not d_step: a script may find a key
   expired, and time passing is a choice.) */
#define SERVE(m, ch, live) \
  :: atomic { !down[m] && nempty(ch) -> \
       ch?g_op, g_t, g_tg, g_a, g_b, g_d; \
       g_r = R_NO; g_v = 0; \
       run_script(m); \
       if \
       :: live -> answer(m, g_t, g_tg, g_r, g_v) \
       :: else -> skip \
       fi; \
       g_op = 0; g_t = 0; g_tg = 0; g_a = 0; g_b = 0; g_d = 0; g_r = 0; g_v = 0 }

#define FROM(cl) SERVE(m, rq[(cl) * N + m], 1) SERVE(m, stale[(cl) * N + m], 0)

proctype Master(byte m) {
end:
  do
  FROM(0)
#if NCL > 1
  FROM(1)
#endif
#if NCL > 2
  FROM(2)
#endif
#if NCL > 3
  FROM(3)
#endif
  od
}

/* PER_CONNECTION (the liveness runs): master m's service of client cl's
   connection as a process of its own. The same atomic steps on the same
   state; what changes is what weak fairness (pan -f) promises: every
   connection with a request waiting is served, as Redis serves each of its
   clients in turn, where one Master process could serve one busy
   connection for ever. */
proctype Conn(byte m; byte cl) {
end:
  do
  SERVE(m, rq[cl * N + m], 1)
  SERVE(m, stale[cl * N + m], 0)
  od
}

#define FLUSH(ch) \
  do \
  :: ch?_, _, _, _, _, _ \
  :: empty(ch) -> break \
  od

/* A master crashes: what its connections carried is lost. It comes back
   with its state (AOF, appendfsync always), or empty once every key it held
   may have expired (a delayed restart, docs/safety.md, Limit 1: forget(m)
   lets each key's client's clock pass its deadline, or keeps the master
   down if a deadline lies past the horizon). */
#define CRASH(mm) \
  :: atomic { faults < MAXFAULTS && !down[mm] -> \
       faults++; down[mm] = 1; \
       for (g_i : 0 .. NCL - 1) { \
         FLUSH(rq[g_i * N + mm]); FLUSH(stale[g_i * N + mm]); connection_lost(g_i, mm) \
       } \
       g_i = 0 } \
  :: atomic { down[mm] -> down[mm] = 0 } \
  :: atomic { down[mm] -> g_n = 1; forget(mm); if :: g_n -> down[mm] = 0 :: else -> skip fi; g_n = 0 }

/* A client's connection to a master drops (stall_timeout, a reset): what
   it had delivered still runs later (stale), the rest is lost. */
#define DROP(cl, mm) \
  :: atomic { faults < MAXFAULTS && nempty(rq[(cl) * N + mm]) && empty(stale[(cl) * N + mm]) -> \
       faults++; \
       do \
       :: rq[(cl) * N + mm]?g_op, g_t, g_tg, g_a, g_b, g_d -> \
          stale[(cl) * N + mm]!g_op, g_t, g_tg, g_a, g_b, g_d \
       :: break \
       od; \
       FLUSH(rq[(cl) * N + mm]); \
       connection_lost(cl, mm); \
       g_op = 0; g_t = 0; g_tg = 0; g_a = 0; g_b = 0; g_d = 0 }
#define DROPS(cl) DROP(cl, 0) DROP(cl, 1) DROP(cl, 2)

proctype Faults() {
end:
  do
  CRASH(0)
  CRASH(1)
  CRASH(2)
  DROPS(0)
#if NCL > 1
  DROPS(1)
#endif
#if NCL > 2
  DROPS(2)
#endif
#if NCL > 3
  DROPS(3)
#endif
  od
}

/* The processes every model starts (its tasks are its own). */
#ifdef PER_CONNECTION
#define RUN_MASTERS \
  for (g_i : 0 .. N * NCL - 1) { run Conn(g_i / NCL, g_i % NCL) }; g_i = 0
#else
#define RUN_MASTERS run Master(0); run Master(1); run Master(2)
#endif
#ifdef NO_FAULTS
#define RUN_ENV RUN_MASTERS
#else
#define RUN_ENV RUN_MASTERS; run Faults()
#endif
