/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Several names held together, and single-name waiters on those names
 * (docs/algorithm.md, sections 10 and 13): multi_acquire.lua and
 * release_all.lua on N = 3 masters for a set {a, b}, mutex_acquire.lua,
 * SET NX PX and mutex_release.lua for a waiter on one name. Scripts:
 * strings.pml; environment: env.pml, env_procs.pml; what is checked:
 * README.md.
 *
 * Task 0 (client 0) acquires the set (its attempts retry on their timer:
 * no release names a set's waiter), holds it, and releases it with
 * release_all.lua 'wake'. Tasks 1 .. NT - 1 (a client each) wait on one
 * name each (task 1 on a, task 2 on b), with a wake list and no retry
 * timer (NO_TIMER, always): a waiter refused while the set holds its name
 * retries only when a release names it on a quorum. The wake-up check is
 * spin's invalid end state: a waiter blocked for ever once every hold was
 * released. Without time (NO_TIME) and without faults (LIVE): a lost
 * wake-up is what the retry timer is for, and this model has none.
 *
 * Switch OLD_RELEASE_ALL (seeded bug, strings.pml): release_all.lua before
 * 7a05ebd published nothing; a set's release freed the waiter's name and
 * woke no one.
 */
#define NO_TIME
#define LIVE
#ifndef NT
#define NT 2              /* the set, and a waiter on a (3: and one on b) */
#endif
#define NCL NT
#define CLIENT_OF(t) (t)
#ifndef ATTS
#define ATTS 2            /* attempts of each task */
#endif
#define TTL 2
#define LAPSE 2
#define NK 2              /* names a (key 0, wake list 0) and b (key 1, list 1) */
#define NL 2
#define NW NT             /* waiter ids 1 .. NT - 1: task w's (0 unused) */
#define SET_MASK 3
#define QCAP 4            /* README.md, "A trap for the next model" */

#include "env.pml"

#define TOKEN(t, a) (1 + (t) * ATTS + (a) - 1)
#define TOKEN_CLIENT(tok) (((tok) - 1) / ATTS)
#define WAITER_CLIENT(w) (w)
#define NAME_OF(t) ((t) - 1)   /* a waiter's key and wake list */

#define WAITER_TASK(w) (w)
#include "release_news.pml"
byte listed[NT];

#include "strings.pml"

inline run_script(m) {
  if
  :: OP_CODE(g_op) == OP_SETNX -> set_nx(m, OP_KEY(g_op), g_a)
  :: OP_CODE(g_op) == OP_MACQ -> mutex_acquire(m, OP_KEY(g_op), OP_KEY(g_op), g_a, g_b, g_d, 0)
  :: OP_CODE(g_op) == OP_MREL -> mutex_release(m, OP_KEY(g_op), OP_KEY(g_op), g_a, g_b, g_d)
  :: OP_CODE(g_op) == OP_WLEAVE -> leave_wake_list(m, OP_KEY(g_op), g_a)
  :: OP_CODE(g_op) == OP_MULTI -> multi_acquire(m, g_a, g_b)
  :: OP_CODE(g_op) == OP_RELALL -> release_all(m, g_a, g_b, g_d)
  fi
}
inline forget(m) { forget_strings(m) }
inline advance_model(cl, d) { advance_strings(cl, d) }

#include "env_procs.pml"

/* The set (acquire_op with names held together): multi_acquire.lua on
   every master; a refused attempt cleaned up (release_all.lua '') where it
   may hold; a retry on its timer; release_all.lua 'wake' on every master. */
proctype SetTask() {
  byte att, tok, tg;
  bool won;
attempt:
  atomic {
    att++; tok = TOKEN(0, att);
    round_start(0, R_EARLY, TTL, OP_MULTI, tok, SET_MASK, 0)
  };
  await_round(0);
  atomic {
    won = (yes[0] >= Q);
    if
    :: won -> held[0] = 1; wend[0] = 1
    :: else -> cleanup_on(0, MAY_HOLD(0), OP_RELALL, tok, SET_MASK, 0)
    fi;
    rdl[0] = 0
  };
  if
  :: won ->
     atomic {
       held[0] = 0; wend[0] = 0;
       cleanup_on(0, ALL_MASK, OP_RELALL, tok, SET_MASK, 1)
     }
  :: !won && att < ATTS -> goto attempt
  :: else -> skip
  fi;
end:
  skip
}

/* A waiter on one name (mutex.pml's Task, NO_TIMER, one acquisition):
   mutex_acquire.lua lists it where refused; it retries only when named on
   a quorum (a listed waiter's retry is the plain SET NX PX); out of
   attempts, it leaves every wake list. */
proctype Waiter(byte t) {
  byte att, tok, tg, k, w;
  bool plain, won;
  k = NAME_OF(t); w = t;   /* its waiter id */
  atomic { wcur[t] = t; listed[t] = 0 };
attempt:
  atomic {
    att++; tok = TOKEN(t, att);
    plain = wk[t] && listed[t] > 0;
    wk[t] = 0;
    if
    :: plain -> round_start(t, R_EARLY, TTL, ON_KEY(OP_SETNX, k), tok, 0, 0)
    :: else -> round_start(t, R_EARLY, TTL, ON_KEY(OP_MACQ, k), tok, w, w)
    fi
  };
  await_round(t);
  atomic {
    if
    :: !plain && no[t] >= Q -> listed[t] = 1
    :: else -> skip
    fi;
    won = (yes[t] >= Q);
    if
    :: won ->
       held[t] = 1; wend[t] = 1; wcur[t] = 0;
       if
       :: !plain -> cleanup_on(t, MASK_OF(t, S_NO), ON_KEY(OP_WLEAVE, k), w, 0, 0)
       :: else -> skip
       fi
    :: else -> cleanup_on(t, MAY_HOLD(t), ON_KEY(OP_MREL, k), tok, REL_CLEANUP, 0)
    fi;
    rdl[t] = 0
  };
  if
  :: won ->
     atomic {
       held[t] = 0; wend[t] = 0;
       if
       :: plain -> cleanup_on(t, ALL_MASK, ON_KEY(OP_MREL, k), tok, REL_WAKE, w)
       :: else -> cleanup_on(t, ALL_MASK, ON_KEY(OP_MREL, k), tok, REL_WAKE, 0)
       fi
     }
  :: !won && att >= ATTS ->
     atomic { wcur[t] = 0; cleanup_on(t, ALL_MASK, ON_KEY(OP_WLEAVE, k), w, 0, 0) }
  :: !won && att < ATTS ->
     /* no retry timer: only a release that names it on a quorum */
     wk[t];
     goto attempt
  fi;
end:
  skip
}

init {
  atomic {
    RUN_ENV;
    run SetTask();
    for (g_i : 1 .. NT - 1) { run Waiter(g_i) };
    g_i = 0
  }
}

/* Exclusion: the set and a waiter on one of its names never both inside
   their windows. */
#if NT > 2
#define SET_AND_WAITER ((IN_CS(0) && IN_CS(1)) || (IN_CS(0) && IN_CS(2)))
#else
#define SET_AND_WAITER (IN_CS(0) && IN_CS(1))
#endif
active proctype exclusion() {
end:
  atomic { SET_AND_WAITER -> assert(false) }
}
