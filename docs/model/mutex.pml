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
 */
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
#include "release_news.pml"

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
  bool plain, won;

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
    wcur[t] = waiter; wk[t] = 0; ntk[t * 2] = 0; ntk[t * 2 + 1] = 0; nnx[t] = 0
  };
attempt:
  /* acquire_op::attempt: a new token; a woken waiter still listed on a
     quorum retries with the plain SET NX PX (unfenced, no description);
     an acquisition that cannot wait sends the plain SET NX PX too. */
  atomic {
    att++; tok = TOKEN(t, k, att);
    plain = waiter == 0 || (wk[t] && listed[t] > 0);
    wk[t] = 0;
    if
    :: plain -> round_start(t, R_EARLY, TTL, OP_SETNX, tok, 0, 0)
    :: else -> round_start(t, R_EARLY, TTL, OP_MACQ, tok, waiter, score)
    fi
  };
  await_round(t);
  /* acquire_op::on_decided */
  atomic {
    if
    :: !plain && no[t] >= Q ->
       /* listed where refused, until the round's start + lapse / 2 */
       listed[t] = ((rdl[t] + LAPSE / 2 > TTL) -> (rdl[t] + LAPSE / 2 - TTL) : 0)
    :: else -> skip
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
  :: att >= ATTS ->
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
  :: atomic { WAIT_A_STEP(t) }; goto attempt
#endif
  :: wk[t] -> goto attempt
  fi;

hold:
  do
#ifndef NO_TIME
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
       held[t] = 0; wend[t] = 0;
       if
       :: plain && waiter != 0 -> cleanup_on(t, ALL_MASK, OP_MREL, tok, REL_WAKE, waiter)
       :: else -> cleanup_on(t, ALL_MASK, OP_MREL, tok, REL_WAKE, 0)
       fi;
       k++
     };
     goto next
  od;
done:
  skip
end:
  skip
}

init {
  atomic {
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
active proctype exclusion() {
end:
  atomic { TWO_IN_CS MORE_IN_CS -> assert(false) }
}
