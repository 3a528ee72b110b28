/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The environment every model shares (docs/model/README.md, "The
 * environment"): N = 3 masters, the connections between clients and
 * masters, answers, time, and the faults.
 *
 * A model defines, before including this file:
 *   NT             tasks: processes that acquire, hold and release (an
 *                  acquire_op and the lock handle it returns)
 *   NCL            clients (a client_impl: one connection to each master)
 *   CLIENT_OF(t)   the client task t runs on
 *   TTL            the lock's ttl, in time steps
 * then the inlines run_script(m) (what master m does with one request) and
 * forget(m) (a restart empty: every key that may have expired goes), and
 * includes env_procs.pml (the processes).
 *
 * Switches (compile time):
 *   LIVE       every request is answered (no deadline passes) and no
 *              faults: for the wake-up checks
 *   NO_FAULTS  no master crash or restart, no dropped connection
 *   NO_TIME    time does not pass (no key expires, every round is in time)
 *   TIMELY     every round is decided within its validity, and a wait (a
 *              retry delay) lets one tick pass (time passes, keys expire):
 *              the liveness runs' network and clocks, which RedLock needs
 *              to make progress at all (docs/safety.md, "Liveness is not
 *              guaranteed")
 *   TAGS       round numbers a task cycles through (7): a reply is counted
 *              only by the round it was sent for, so TAGS must exceed the
 *              rounds of one task that a connection can hold (QCAP)
 */
#ifndef TAGS
#define TAGS 7
#endif
#define N 3
#define Q 2                 /* quorum_of(N) = N / 2 + 1 (src/quorum/validity.hpp) */

#ifndef QCAP
#define QCAP 2              /* requests a connection holds: a task that sends
                               more waits for the master (back-pressure) */
#endif
#ifndef MAXFAULTS
#define MAXFAULTS 1         /* master crashes, dropped connections */
#endif
#ifdef LIVE
#define NO_FAULTS
#endif

/* Answers, as the classify functions read them (src/locks/grant_replies.cpp,
   classify_one_zero in src/quorum/replies.cpp): */
#define R_NO  0             /* refused: nil or 0 */
#define R_YES 1             /* granted, done: OK, a counter, 1 */
#define R_ERR 2             /* an error reply */

/* One master's answer in a round (quorum_round's node_outcome states). */
#define S_NONE 0            /* not asked */
#define S_PEND 1            /* sent, not answered yet */
#define S_YES  2            /* locked */
#define S_NO   3            /* refused */
#define S_FAIL 4            /* failed or unknown: an error, a deadline passed,
                               the connection lost, or not connected */

/* A request on one client's connection to one master, in the order sent
   (TCP): operation, task, round (0: a clean-up whose answer nobody reads),
   three arguments. */
chan rq[NCL * N] = [QCAP] of { byte, byte, byte, byte, byte, byte };
/* What a connection that was dropped had delivered to its master: it still
   runs, in order, at any later time (a socket buffer, a paused master), and
   nobody reads its answer (docs/algorithm.md, section 2, "Unknown means
   maybe yes"). */
chan stale[NCL * N] = [QCAP] of { byte, byte, byte, byte, byte, byte };

bool down[N];    /* master m crashed and has not restarted */
byte faults;     /* faults injected so far */

/* ---- Time ----
   Each client has its own clock; it only moves forward, and only where
   something observes it: a master that finds a key (or a read-write hold,
   a queue entry) written on the client's behalf past its deadline, a round
   decided too late, a retry delay. Every deadline is kept as the time left
   until it, on the clock of the client whose request set it: a key written
   for a round with a ttl of L has L left at the write, which comes after
   the round's start, when the round's validity had L left (or less), so
   the key lives at least as long as the round's validity and any window it
   gives. That is the drift assumption (docs/safety.md, A2 and Lemma 1): a
   key expires no earlier than the validity of the round that wrote it
   ends, and at any point after; this is the only place the models state
   it. One clock per client loses no real interleaving: a key's expiry is
   compared only with its own client's windows. A model's
   advance_model(cl, d) moves everything on client cl's clock d steps on
   (countdowns stop at 0). */

/* Deadline `left` (time left on client cl's clock) has passed, or this step
   lets time pass until it has: `gone` runs then. (Inside an atomic step.) */
#ifdef NO_TIME
#define MAY_PASS(cl, left, gone) skip
#else
#define MAY_PASS(cl, left, gone) \
  if \
  :: (left) == 0 -> gone \
  :: (left) > 0 && CAN_JUMP(cl) -> g_d2 = left; advance(cl, g_d2); gone \
  :: (left) > 0 -> skip \
  fi
#endif
/* TIMELY: a client's clock does not jump while one of its rounds is in
   flight (IN_FLIGHT(cl), defined by the model), or every round could be
   made late; it still ticks at the client's waits. */
#ifdef TIMELY
#define CAN_JUMP(cl) (!IN_FLIGHT(cl))
#else
#define CAN_JUMP(cl) 1
#endif
#define DOWN(x, d) if :: (x) > (d) -> x = (x) - (d) :: else -> x = 0 fi

/* The round each task waits on (quorum_round, quorum_decision): its number
   (0: none), its failure_rule, each master's answer st[t * N + m] and what
   a yes or a refusal carried (a counter, a slot, a rank), the counts, and
   the deadline of its validity (the round's start + its ttl). A master
   records its answer in the step that runs the script: the reply's travel
   is folded into that step, and a deadline that passes first is the task's
   own step (await_round). */
byte ctag[NT];
byte rule[NT];
byte st[NT * N];
byte rv[NT * N];
byte yes[NT], no[NT], fl[NT];
byte rdl[NT];    /* time left of its validity (validity_left) */

/* Task t's validity window (lock_state::valid_until): time left; held[t]:
   t holds a lock (lock_state, not released). */
byte wend[NT];
bool held[NT];
#define IN_CS(t) (held[t] && wend[t] > 0)

/* Scratch of one atomic step: never live from one step to the next, so not
   part of the state. */
hidden byte g_op, g_t, g_tg, g_a, g_b, g_d, g_r, g_v, g_i, g_j, g_k, g_n, g_x, g_live;
hidden byte g_d2, g_y;  /* (advance) */

/* Client cl's clock moves d steps on: every deadline on it gets nearer. */
inline advance(cl, d) {
  for (g_y : 0 .. NT - 1) {
    if
    :: CLIENT_OF(g_y) == cl -> DOWN(rdl[g_y], d); DOWN(wend[g_y], d)
    :: else -> skip
    fi
  }
  g_y = 0;
  advance_model(cl, d)
}

/* ---- the client side of one quorum round (src/quorum/quorum_round.cpp,
   quorum_decision.hpp) ---- */

/* quorum_decision::ready(): failure_rule::early and ::settled. A round is
   decided the moment it is ready: answers after that are not counted. */
#ifndef REACHED            /* a model whose yes names a choice (a semaphore's
                              slot) counts a quorum per choice */
#define REACHED(t) (yes[t] >= Q)
#define IMPOSSIBLE(t) (yes[t] + (N - yes[t] - no[t] - fl[t]) < Q)
#endif
#define ANSWERED(t) (yes[t] + no[t] + fl[t] == N)
#define R_EARLY 1
#define R_SETTLED 2
#define READY(t) (REACHED(t) || ANSWERED(t) || (rule[t] == R_EARLY && IMPOSSIBLE(t)))
/* lease_round_error: not_held only when refusals alone make a quorum impossible */
#define REFUSED_BY_QUORUM(t) (no[t] > N - Q)

/* quorum_round::start: one request to every master (a master known down
   fails at once: not_connected, never sent), with validity until the
   client's clock passes now + ttl. `tg` is the task's local round counter. */
inline round_start(t, RULE, L, OP, A, B, D) {
  tg = (tg % TAGS) + 1;
  ctag[t] = tg; rule[t] = RULE; rdl[t] = L;
  yes[t] = 0; no[t] = 0; fl[t] = 0;
  for (g_i : 0 .. N - 1) {
    rv[t * N + g_i] = 0;
    if
    :: down[g_i] -> st[t * N + g_i] = S_FAIL; fl[t]++
    :: else -> st[t * N + g_i] = S_PEND; rq[CLIENT_OF(t) * N + g_i]!OP, t, tg, A, B, D
    fi
  }
  g_i = 0
}

/* quorum_round::start_on(nodes) for a round whose answers nobody reads (a
   clean-up): to every master in `mask` (bit m) that is up. */
inline cleanup_on(t, mask, OP, A, B, D) {
  for (g_i : 0 .. N - 1) {
    if
    :: ((mask) & (1 << g_i)) && !down[g_i] -> rq[CLIENT_OF(t) * N + g_i]!OP, t, 0, A, B, D
    :: else -> skip
    fi
  }
  g_i = 0
}

/* Master m answers request `tg` of task t: recorded if t still waits for
   it (quorum_round::on_reply), else dropped (an answer after the decision
   changes nothing: README, "What is abstracted away"). */
inline answer(m, t, tg, r, v) {
  if
  :: tg != 0 && ctag[t] == tg && st[t * N + m] == S_PEND && !READY(t) ->
     rv[t * N + m] = v;
     if
     :: r == R_YES -> st[t * N + m] = S_YES; yes[t]++
     :: r == R_NO -> st[t * N + m] = S_NO; no[t]++
     :: r == R_ERR -> st[t * N + m] = S_FAIL; fl[t]++
     fi
  :: else -> skip
  fi
}

/* Masters by their answer to task t, as bit masks (bit m). */
#define MASK_OF(t, s) ((st[(t) * N] == s) | ((st[(t) * N + 1] == s) << 1) | ((st[(t) * N + 2] == s) << 2))
/* acquire_op's may_hold (kinds.cpp): every master that did not refuse */
#define MAY_HOLD(t) (7 & ~MASK_OF(t, S_NO))
#define ALL_MASK 7

/* Waits until the round is decided. Every request of a round has the same
   deadline (start + node_timeout: quorum_round::begin_round): when it
   passes, every master yet to answer counts as failed (unknown), at once;
   not in LIVE runs. (A dropped connection or a crashed master fails the
   requests it carried: connection_lost.) Then the decision's time: the
   round may have taken long enough for its validity to be gone (the clock
   moves to its deadline). */
inline await_round(t) {
#ifdef LIVE
  READY(t);
#else
  if
  :: READY(t)
  :: atomic {
       !READY(t) ->
       for (g_i : 0 .. N - 1) {
         if
         :: st[t * N + g_i] == S_PEND -> st[t * N + g_i] = S_FAIL; fl[t]++
         :: else -> skip
         fi
       }
       g_i = 0
     }
  fi;
#endif
  atomic {
    ctag[t] = 0;
#if !defined(NO_TIME) && !defined(TIMELY)
    if
    :: skip
    :: rdl[t] > 0 -> g_d2 = rdl[t]; advance(CLIENT_OF(t), g_d2); g_d2 = 0
    fi
#endif
  }
}
/* The round's validity is not over (validity_left > 0 at the decision). */
#define IN_TIME(t) (rdl[t] > 0)

/* A retry delay, or any wait of the task: its client's clock may move one step. */
#ifdef NO_TIME
#define WAIT_A_STEP(t) skip
#elif defined(TIMELY)
#define WAIT_A_STEP(t) advance(CLIENT_OF(t), 1)
#else
#define WAIT_A_STEP(t) \
  if \
  :: skip \
  :: advance(CLIENT_OF(t), 1) \
  fi
#endif

/* The requests of client cl's tasks pending on master m fail: the
   connection they were on is gone. */
inline connection_lost(cl, m) {
  for (g_x : 0 .. NT - 1) {
    if
    :: CLIENT_OF(g_x) == cl && ctag[g_x] != 0 && st[g_x * N + m] == S_PEND && !READY(g_x) ->
       st[g_x * N + m] = S_FAIL; fl[g_x]++
    :: else -> skip
    fi
  }
  g_x = 0
}

#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define MIN(a, b) ((a) < (b) -> (a) : (b))
