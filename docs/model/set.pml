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
 *
 * LIVENESS: checked with LTL under weak fairness (pan -a -f; README.md,
 * "Liveness"), with time: the waiter on a makes one acquisition and retries
 * without bound, on its retry timer (WAIT_A_STEP) and when a release names
 * it (its ATTS tokens reused in turn, its waiter id and score fixed); the
 * set makes one acquisition (ATTS attempts, a retry delay between them) and
 * may crash at any step (its requests sent, waiting, holding), its keys
 * and its own wake-list entries staying until its clock, which goes on,
 * passes their deadlines. Every reply arrives, in time (LIVE, TIMELY), each
 * connection is served (PER_CONNECTION).
 * WAKE_ONLY (seeded liveness bug, as mutex.pml's): a waiter that a quorum
 * refused and listed retries only when a release names it, not on its
 * timer.
 */
#define LIVE
#ifdef LIVENESS
#define TIMELY
#define PER_CONNECTION
#define TAGS 5            /* > QCAP */
#define IN_FLIGHT(cl) (rdl[cl] > 0)   /* from its start to its decision (one task per client) */
#define FOREVER(t) ((t) == 1)   /* the waiter on a */
#else
#define NO_TIME
#define FOREVER(t) 0
#endif
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
#include "liveness.pml"
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
   may hold; a retry on its timer; release_all.lua 'wake' on every master.
   With LIVENESS it may crash at any step. */
proctype SetTask() {
  byte att, tok, tg;
  bool won;
attempt:
  atomic {
    ROOM(0) ->
    att++; tok = TOKEN(0, att);
    round_start(0, R_EARLY, TTL, OP_MULTI, tok, SET_MASK, 0)
  };
#ifdef LIVENESS
  if
  TASK_CRASH(0)             /* its requests sent, still to run */
  :: skip
  fi;
#endif
  await_round(0);
  atomic {
    ROOM(0) ->
    won = (yes[0] >= Q && IN_TIME(0));
    if
    :: won -> held[0] = 1; wend[0] = rdl[0]
    :: else -> cleanup_on(0, MAY_HOLD(0), OP_RELALL, tok, SET_MASK, 0)
    fi;
    rdl[0] = 0
  };
  if
  :: won ->
#ifdef LIVENESS
     if
     TASK_CRASH(0)          /* holding */
     :: skip
     fi;
#endif
     atomic {
       ROOM(0) ->
       held[0] = 0; wend[0] = 0;
       cleanup_on(0, ALL_MASK, OP_RELALL, tok, SET_MASK, 1)
     }
  :: !won && att < ATTS ->
#ifdef LIVENESS
     if
     TASK_CRASH(0)          /* waiting for its retry */
     :: skip
     fi;
#endif
     atomic { WAIT_A_STEP(0) };
     goto attempt
  :: else -> skip
  fi;
end:
  skip;
#ifdef LIVENESS
  goto fin;
crashed:
  CLOCK_GOES_ON(0);
fin:
  skip
#endif
}

/* A waiter on one name (mutex.pml's Task, NO_TIMER, one acquisition):
   mutex_acquire.lua lists it where refused; it retries only when named on
   a quorum (a listed waiter's retry is the plain SET NX PX); out of
   attempts, it leaves every wake list. With LIVENESS (FOREVER) it never
   gives up, retries on its timer too, and stops once it holds. */
proctype Waiter(byte t) {
  byte att, tok, tg, k, w;
  bool plain, won, onlist;
  k = NAME_OF(t); w = t;   /* its waiter id */
  atomic { wcur[t] = t; listed[t] = 0 };
attempt:
  atomic {
    ROOM(t) ->
    att = (FOREVER(t) -> (att % ATTS) + 1 : att + 1); tok = TOKEN(t, att);
    plain = wk[t] && listed[t] > 0;
    wk[t] = 0;
#ifdef LIVENESS
    news_reset(t);
#endif
    if
    :: plain -> round_start(t, R_EARLY, TTL, ON_KEY(OP_SETNX, k), tok, 0, 0)
    :: else -> round_start(t, R_EARLY, TTL, ON_KEY(OP_MACQ, k), tok, w, w)
    fi
  };
  await_round(t);
  atomic {
    ROOM(t) ->
    onlist = !plain && no[t] >= Q;
    if
    :: onlist -> listed[t] = 1
    :: else -> skip
    fi;
    won = (yes[t] >= Q && IN_TIME(t));
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
#ifdef LIVENESS
  :: won && FOREVER(t) -> goto end   /* the property reached: it holds for ever */
  :: won && !FOREVER(t) ->
#else
  :: won ->
#endif
     atomic {
       ROOM(t) ->
       held[t] = 0; wend[t] = 0;
       if
       :: plain -> cleanup_on(t, ALL_MASK, ON_KEY(OP_MREL, k), tok, REL_WAKE, w)
       :: else -> cleanup_on(t, ALL_MASK, ON_KEY(OP_MREL, k), tok, REL_WAKE, 0)
       fi
     }
  :: !won && !FOREVER(t) && att >= ATTS ->
     atomic { ROOM(t) -> wcur[t] = 0; cleanup_on(t, ALL_MASK, ON_KEY(OP_WLEAVE, k), w, 0, 0) }
  :: !won && (FOREVER(t) || att < ATTS) ->
     if
#ifdef LIVENESS
     /* the retry timer (WAKE_ONLY: none for a waiter a quorum listed) */
#ifdef WAKE_ONLY
     :: !onlist -> atomic { WAIT_A_STEP(t) }; goto attempt
#else
     :: atomic { WAIT_A_STEP(t) }; goto attempt
#endif
#endif
     /* a release that names it on a quorum (without LIVENESS, the only
        way: no retry timer) */
     :: wk[t] -> goto attempt
     fi
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
#ifdef LIVENESS
/* Liveness (README.md, "Liveness"): nothing stays blocked after every
   holder crashed and the ttls passed: the waiter on a, retrying without
   bound, acquires whatever the set did (hold, crash anywhere). */
ltl waiter_acquires { <> held[1] }
#endif
