/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mutex (docs/algorithm.md, sections 2 to 4 and 10): SET NX PX or
 * mutex_acquire.lua on N = 3 masters, the wake list and the one waiter a
 * release names, extend, release. Scripts: strings.pml; environment:
 * env.pml, env_procs.pml; what is checked and how: README.md.
 *
 * NT tasks (acquire_op, then the lock it returns), each on its own client;
 * each makes ACQS acquisitions of up to ATTS attempts, and may wait (so it
 * is a waiter with a wake-list entry: acquire_op::start), and extends its
 * hold at most once, to its ttl or a shorter one.
 *
 * Switches: SHORTEN_EXTEND (seeded bug: extend.lua before the lease
 * rules), NO_TIMER (a waiter retries only when a release wakes it: the
 * wake-up check), NO_WAKE_LISTS (acquisitions that cannot wait: plain SET
 * NX PX, no wake list), and env.pml's LIVE, NO_FAULTS, NO_TIME.
 *
 * LIVENESS: the runs checked with LTL under weak fairness (pan -a -f;
 * README.md, "Liveness"). Task 0 acquires and releases for ever, retrying
 * without bound; the other makes one acquisition (ATTS attempts) and may
 * crash at any step: its requests in flight still run, its keys and
 * wake-list entries stay until its clock, which goes on, passes their
 * deadlines. Task 0 reuses its two tokens in turn and its one waiter id (safe
 * for the tokens: every request of a connection runs in order, so nothing
 * sent with one runs after its next use; the waiter id: README.md,
 * "Liveness"), and wake-list scores are ranks (WSCORE), so the state space
 * stays finite. Every reply arrives, in time (LIVE, TIMELY), each
 * connection is served (PER_CONNECTION). No extend.
 * WAKE_ONLY (seeded liveness bug): a waiter that a quorum refused and
 * listed retries only when a release names it, not on its timer.
 */
#ifdef LIVENESS
#define LIVE
#define TIMELY
#define PER_CONNECTION
#define TAGS 3           /* > QCAP */
#define IN_FLIGHT(cl) (rdl[cl] > 0)   /* from its start to its decision (one task per client) */
#define FOREVER(t) ((t) == 0)
/* A waiter's score is when its acquisition began: here its rank among the
   waiter ids, the latest to begin last (rank_last). */
#define WSCORE(m, l, w) rank[w]
#else
#define FOREVER(t) 0
#endif
#ifndef NT
#define NT 2
#endif
#define NCL NT
#define CLIENT_OF(t) (t)
#ifndef ACQS
#define ACQS 1
#endif
#ifndef ATTS
#define ATTS 2
#endif
#define TTL 2            /* the ttl, in steps of the clients' clocks */
#define SHORT 1          /* an extend to a shorter ttl */
#define LAPSE 2          /* wake_list_lapse */
#define NK 1
#define NL 1
#define NW (NT * ACQS)

#include "env.pml"

#define TOKEN(t, k, a) (1 + ((t) * ACQS + (k)) * ATTS + (a) - 1)
#define TOKEN_CLIENT(tok) (((tok) - 1) / (ACQS * ATTS))
#define WAITER(t, k) (1 + (t) * ACQS + (k))
#define WAITER_TASK(w) (((w) - 1) / ACQS)
#define WAITER_CLIENT(w) WAITER_TASK(w)

byte asks;               /* acquisitions begun: a waiter's score (waiter_score) */
byte listed[NT];         /* acquire_op::listed_until_, on the task's clock */
/* The next acquisition or attempt; a task that cycles for ever reuses
   them in turn. */
#define NEXT_ACQ(t, k) k = (FOREVER(t) -> (k + 1) % ACQS : k + 1)
#define NEXT_ATT(t, att) att = (FOREVER(t) -> (att % ATTS) + 1 : att + 1)
#ifdef LIVENESS
byte rank[NW + 1];       /* waiter w's rank: 1 began first */
/* Waiter w begins an acquisition: it goes last (the ranks of those behind
   it move up one). */
inline rank_last(w) {
  for (g_j : 1 .. NW) {
    if
    :: rank[g_j] > rank[w] -> rank[g_j]--
    :: else -> skip
    fi
  }
  g_j = 0; rank[w] = NW
}
#endif
#include "release_news.pml"
#include "liveness.pml"

#include "strings.pml"

inline run_script(m) {
  if
  :: g_op == OP_SETNX -> set_nx(m, 0, g_a)
  :: g_op == OP_MACQ -> mutex_acquire(m, 0, 0, g_a, g_b, g_d, 0)
  :: g_op == OP_MREL -> mutex_release(m, 0, 0, g_a, g_b, g_d)
  :: g_op == OP_EXT -> extend_string(m, 0, g_a, g_b)
  :: g_op == OP_WLEAVE -> leave_wake_list(m, 0, g_a)
  fi
}
inline forget(m) { forget_strings(m) }
inline advance_model(cl, d) {
  advance_strings(cl, d);
  if
  :: cl < NT -> DOWN(listed[cl], d)
  :: else -> skip
  fi
}

#include "env_procs.pml"

proctype Task(byte t) {
  byte k, att, tok, waiter, score, tg, ext;
  bool plain, won, onlist;

next:
  if
  :: k == ACQS -> goto done
  :: else -> skip
  fi;
  /* acquire_op::start: a waiter (it may wait), named <client id>:<n>,
     scored by when it began; it hears releases from now on. */
  atomic {
    asks++; score = asks; att = 0; ext = 0; listed[t] = 0;
#ifndef NO_WAKE_LISTS
    waiter = WAITER(t, k);
#endif
#ifdef LIVENESS
    asks = 0; score = 1; rank_last(waiter);
#endif
    wcur[t] = waiter; wk[t] = 0; ntk[t * 2] = 0; ntk[t * 2 + 1] = 0; nnx[t] = 0
  };
attempt:
  /* acquire_op::attempt: a new token; a woken waiter still listed on a
     quorum retries with the plain SET NX PX (unfenced, no description);
     an acquisition that cannot wait sends the plain SET NX PX too. */
  atomic {
    ROOM(t) ->
    NEXT_ATT(t, att); tok = TOKEN(t, k, att);
    plain = waiter == 0 || (wk[t] && listed[t] > 0);
    wk[t] = 0;
#ifdef LIVENESS
    news_reset(t);
#endif
    if
    :: plain -> round_start(t, R_EARLY, TTL, OP_SETNX, tok, 0, 0)
    :: else -> round_start(t, R_EARLY, TTL, OP_MACQ, tok, waiter, score)
    fi
  };
#ifdef LIVENESS
  if
  TASK_CRASH(t)             /* its requests sent, still to run */
  :: skip
  fi;
#endif
  await_round(t);
  /* acquire_op::on_decided */
  atomic {
    ROOM(t) ->
    if
    :: !plain && no[t] >= Q ->
       /* listed where refused, until the round's start + lapse / 2 */
       listed[t] = ((rdl[t] + LAPSE / 2 > TTL) -> (rdl[t] + LAPSE / 2 - TTL) : 0);
       onlist = 1
    :: else -> onlist = 0
    fi;
    won = (yes[t] >= Q && IN_TIME(t));   /* quorum_decision::acquired, min_validity 0 */
    if
    :: won ->
       held[t] = 1; wend[t] = rdl[t];
       /* acquire_op::acquired: leave the lists that refused us (a plain
          retry's entries are taken down by its hold's release) */
       wcur[t] = 0;
       if
       :: !plain -> cleanup_on(t, MASK_OF(t, S_NO), OP_WLEAVE, waiter, 0, 0)
       :: else -> skip
       fi
    :: else ->
       /* acquire_op::abandon_attempt: release_abandoned (mutex_release.lua
          '0') on every master that did not refuse */
       cleanup_on(t, MAY_HOLD(t), OP_MREL, tok, REL_CLEANUP, 0)
    fi;
    rdl[t] = 0
  };
  if
  :: won -> goto hold
  :: !won && !FOREVER(t) && att >= ATTS ->
     /* acquire_op::retry_or_fail: out of attempts, complete(error): a
        waiter that gives up leaves every wake list */
     atomic {
       wcur[t] = 0;
       if
       :: waiter != 0 -> cleanup_on(t, ALL_MASK, OP_WLEAVE, waiter, 0, 0)
       :: else -> skip
       fi;
       k++
     };
     goto next
  :: else -> skip
  fi;
  /* waiting: the retry timer, or a release that named us on a quorum
     (acquire_op::watch_releases, named_by_release, wake) */
  if
#ifndef NO_TIMER
#ifdef WAKE_ONLY
  :: !onlist -> atomic { WAIT_A_STEP(t) }; goto attempt
#else
  :: atomic { WAIT_A_STEP(t) }; goto attempt
#endif
#endif
  :: wk[t] -> goto attempt
  TASK_CRASH(t)             /* waiting, perhaps listed */
  fi;

hold:
  do
  TASK_CRASH(t)             /* holding */
#if !defined(NO_TIME) && !defined(LIVENESS)
  /* run_extend: extend.lua on every master; the window moves later only
     (lock_state::extend_window), and only while it lasts */
  :: ext < 1 ->
     atomic {
       ext++;
       WAIT_A_STEP(t);
       if
       :: round_start(t, R_SETTLED, TTL, OP_EXT, tok, TTL, 0)
       :: round_start(t, R_SETTLED, SHORT, OP_EXT, tok, SHORT, 0)
       fi
     };
     await_round(t);
     atomic {
       if
       :: yes[t] >= Q && IN_TIME(t) && IN_CS(t) -> wend[t] = MAX(wend[t], rdl[t])
       :: else -> skip   /* not_held or validity_expired: the window stays */
       fi;
       rdl[t] = 0
     }
#endif
  /* start_release: no validity from the moment it is asked;
     mutex_release.lua '1' on every master (taking down the holder's own
     wake-list entries if it won by a plain retry) */
  :: atomic {
       ROOM(t) ->
       held[t] = 0; wend[t] = 0;
       if
       :: plain && waiter != 0 -> cleanup_on(t, ALL_MASK, OP_MREL, tok, REL_WAKE, waiter)
       :: else -> cleanup_on(t, ALL_MASK, OP_MREL, tok, REL_WAKE, 0)
       fi;
       NEXT_ACQ(t, k)
     };
     goto next
  od;
done:
  skip
end:
  skip;
#ifdef LIVENESS
  goto fin;
crashed:
  CLOCK_GOES_ON(t);
fin:
  skip
#endif
}

init {
  atomic {
#ifdef LIVENESS
    for (g_j : 1 .. NW) { rank[g_j] = g_j }; g_j = 0;
#endif
    RUN_ENV;
    run Task(0); run Task(1)
#if NT > 2
    ; run Task(2)
#endif
  }
}

/* Exclusion: no two validity windows overlap (docs/safety.md, "The
   property"): a monitor that can fail in every reachable state. */
#define TWO_IN_CS ((IN_CS(0) && IN_CS(1))
#if NT > 2
#define MORE_IN_CS || (IN_CS(0) && IN_CS(2)) || (IN_CS(1) && IN_CS(2)))
#else
#define MORE_IN_CS )
#endif
#ifndef LIVENESS
active proctype exclusion() {
end:
  atomic { TWO_IN_CS MORE_IN_CS -> assert(false) }
}
#else
/* Liveness (README.md, "Liveness"). survivor: task 0 acquires again and
   again, whatever the other did before it crashed or finished (its keys
   expire, its wake-list entries lapse, its requests in flight run): a
   waiter on a lock that is, or becomes, free and uncontended gets it. */
ltl survivor { [] <> held[0] }
#endif
