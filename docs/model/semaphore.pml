/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The semaphore (docs/algorithm.md, section 12): P permit slots, each a
 * quorum mutex, on N = 3 masters; semaphore_acquire.lua takes the first free
 * slot of the caller's candidates, the client counts votes per slot, gives
 * back stray slots, extends and releases its slot (mutex_release.lua, also
 * 'quiet' with the wake-up held back and sent later with 'pass'). Scripts:
 * here and strings.pml; environment: env.pml, env_procs.pml; what is
 * checked and how: README.md.
 *
 * NT tasks (acquire_op, then the permit it returns), each on its own
 * client; each makes ACQS acquisitions of up to ATTS attempts, may wait (a
 * waiter on the semaphore's wake list), extends at most once (with time),
 * and releases loudly ('1') or quietly ('quiet': client_impl::
 * retakes_permits, a timing heuristic, so either).
 *
 * Switches: COUNT_ANY_SLOT (seeded bug: yes votes counted over every slot,
 * the quorum-of-counters design section 12 rules out), RELEASE_EVERY_SLOT
 * (seeded bug: a release that DELs every slot, whoever holds it),
 * NO_WAKE_LISTS (acquisitions that cannot wait: no waiter id, no wake
 * list), NO_RELEASE (a holder keeps its permit: the search spends itself
 * on the acquisitions), FIRST_FIXED (every attempt's first slot fixed: 0 for the first
 * NT - 1 tasks, 1 for the last, rather than random_below), NO_QUIET (loud releases only), NO_TIMER (a waiter retries only when a release wakes it), and env.pml's
 * LIVE, NO_FAULTS, NO_TIME.
 *
 * LIVENESS: checked with LTL under weak fairness (pan -a -f; README.md,
 * "Liveness"): task 0 makes one acquisition and retries without bound
 * (reusing its ATTS tokens in turn, as mutex.pml's task 0); tasks 1 and 2
 * make one each and may crash at any step (asking, waiting, holding both
 * permits): their requests in flight still run, their slots and wake-list
 * entries stay until their clocks, which go on, pass the deadlines. The
 * property `acquires`: task 0 gets a permit. Every reply arrives, in time
 * (LIVE, TIMELY), each connection is served (PER_CONNECTION). No extend.
 * WAKE_ONLY (seeded liveness bug): a waiter that a quorum refused and
 * listed retries only when a release names it, not on its timer.
 *
 * Script hashes (SHA1 as sent: cmake/lua_text.cmake), checked by
 * test/model/check_script_hashes.cmake (the others it runs are
 * strings.pml's):
 * @script lua/semaphore_acquire.lua 291a1126fd3a3fc59806d711d68d3d3cf1b41009
 */
#ifdef LIVENESS
#define LIVE
#define TIMELY
#define PER_CONNECTION
#define IN_FLIGHT(cl) (rdl[cl] > 0)   /* from its start to its decision (one task per client) */
#define FOREVER(t) ((t) == 0)
#else
#define FOREVER(t) 0
#endif
#ifndef NT
#define NT 3
#endif
#define NCL NT
#define CLIENT_OF(t) (t)
#ifndef ACQS
#define ACQS 1
#endif
#ifndef ATTS
#define ATTS 2
#endif
#define P 2              /* permits: slots {R}:permit:0 and :1 (keys 0, 1) */
#define TTL 2
#define SHORT 1
#define LAPSE 2
#define NK P
#define NL 1             /* the semaphore's wake list {R}:wake */
#define NW (NT * ACQS)
#define QCAP 4           /* README.md, "A trap for the next model" */

/* quorum_decision with a choice: an acquisition's yes names its slot (the
   position among the attempt's candidates, rv), and a quorum is a quorum
   for one slot; a yes for another slot counts against it like a refusal.
   The task's other rounds (extend, the quiet release) count every yes. */
bool choosing[NT];
#define VOTES(t, c) (((st[(t) * N] == S_YES) && (rv[(t) * N] == (c))) + \
                     ((st[(t) * N + 1] == S_YES) && (rv[(t) * N + 1] == (c))) + \
                     ((st[(t) * N + 2] == S_YES) && (rv[(t) * N + 2] == (c))))
#define BEST(t) ((VOTES(t, 0) > VOTES(t, 1)) -> VOTES(t, 0) : VOTES(t, 1))
#define WINNER(t) ((VOTES(t, 0) >= VOTES(t, 1)) -> 0 : 1)
#ifdef COUNT_ANY_SLOT
#define COUNTED_ANY 1
/* Seeded bug: every yes counted, whatever slot it names (a holder count per
   master: docs/algorithm.md, section 12, "Why not a counter"): env.pml's
   REACHED and IMPOSSIBLE. */
#else
#define COUNTED_ANY 0
#define REACHED(t) ((choosing[t] -> BEST(t) : yes[t]) >= Q)
#define IMPOSSIBLE(t) ((choosing[t] -> BEST(t) : yes[t]) + (N - yes[t] - no[t] - fl[t]) < Q)
#endif

#include "env.pml"

#define TOKEN(t, k, a) (1 + ((t) * ACQS + (k)) * ATTS + (a) - 1)
#define TOKEN_CLIENT(tok) (((tok) - 1) / (ACQS * ATTS))
#define WAITER(t, k) (1 + (t) * ACQS + (k))
#define WAITER_TASK(w) (((w) - 1) / ACQS)
#define WAITER_CLIENT(w) WAITER_TASK(w)
/* permit_slot(first, permits, position) (kinds.hpp): candidates in order
   from a first slot, wrapping round. */
#define SLOT(first, pos) (((first) + (pos)) % P)

byte asks;               /* acquisitions begun: a waiter's score */
byte listed[NT];         /* acquire_op::listed_until_, on the task's clock */
byte slot[NT];           /* lock_state::permit: the slot task t holds */
#include "release_news.pml"
#include "liveness.pml"

#include "strings.pml"

#define OP_SEMACQ 8      /* semaphore_acquire.lua: a = token, b = waiter id, d = score + 16 * first slot */
#define SCORE_OF(d) ((d) & 15)
#define FIRST_OF(d) ((d) >> 4)

/* semaphore_acquire.lua lines 53-71: the candidates free, counted first in
   one call (EXISTS of every candidate; g_n), and whether the last free slot
   is kept (g_kept): read only when exactly one candidate is free, kept for
   a live waiter other than the caller that heads master m's wake list and
   has waited longer than the caller's retry (time is not modelled here:
   either). None free: no slot is tried (54 tries = 0: semaphore_acquire's
   loop finds each one held, as SET NX would), the refusal is the usual
   one; two or more: the list is not read, the first free one is taken.
   (The script also asks that the head be a permit's waiter, ':p<n>', and
   that its entry live no longer than the asker's would: every waiter here
   is one, and every entry's lapse is LAPSE.) */
hidden byte g_kept;
inline keep_last_slot(m, waiter, first) {
  g_n = 0;
  for (g_i : 0 .. P - 1) {                               /* 53 EXISTS KEYS[1..n]: free = n - held */
    observe_key(m, SLOT(first, g_i));
    if
    :: key[K(m, SLOT(first, g_i))] == 0 -> g_n++
    :: else -> skip
    fi
  }
  g_i = 0;
  if
  :: g_n == 1 ->                                         /* 57 free == 1 and ARGV[9] > 0 (the retry) */
     lowest_waiter(m, 0);                                /* 58 ZRANGE wake 0 0 WITHSCORES (pcall) */
     if
     :: g_k != 0 && g_k != waiter && !LAPSED(m, 0, g_k) ->  /* 60-67 ':p'; TIME; ZSCORE wake_until head > now */
        if
        :: g_kept = 1                                    /* 67 score + ARGV[9] <= now: waited long; 68 tries = 0 */
        :: skip                                          /* 67 not yet */
        fi
     :: else -> skip
     fi;
     g_k = 0
  :: else -> skip
  fi;
  g_n = 0
}

/* semaphore_acquire.lua on master m: the first free slot among the
   candidates from `first`, its position the answer (g_v), unless the last
   one is kept for a waiter that has waited long. The wake list is read and
   written through redis.pcall (keep_last_slot's reads, the ZREMs at 81,
   lib/list_waiter.lua): a key of another type there (the user's own data)
   is left as it is and the waiter not listed; not modelled, the model has
   no key types. Line numbers are of each file as written (the include at
   26 not expanded). */
inline semaphore_acquire(m, token, waiter, score, first) {
  /* 31-34 GET {R}:permits: one number of permits here (not modelled) */
  keep_last_slot(m, waiter, first);
  g_n = 0;                                               /* g_n: a slot taken */
  for (g_i : 0 .. P - 1) {                               /* 72 for i = 1, tries */
    if
    :: !g_n && !g_kept ->
       observe_key(m, SLOT(first, g_i));
       if
       :: key[K(m, SLOT(first, g_i))] == 0 ->            /* 73 SET KEYS[i] ARGV[1] NX PX ARGV[2] */
          key[K(m, SLOT(first, g_i))] = token; kdl[K(m, SLOT(first, g_i))] = TTL;
          g_n = 1; g_v = g_i;
          /* 76-77 PTTL, SET {R}:permits: not modelled */
          if
          :: waiter != 0 && wsc[W(m, 0, waiter)] != 0 -> /* 78-82 ZREM wake waiter == 1 (pcall) */
             wsc[W(m, 0, waiter)] = 0; wdl[W(m, 0, waiter)] = 0  /* ZREM wake_until waiter (pcall) */
          :: else -> skip
          fi;
          /* 83-94 the description, the slot's fence counter: not modelled */
          g_r = R_YES                                    /* 95 return i - 1 */
       :: else -> skip
       fi
    :: else -> skip
    fi
  }
  g_i = 0;
  if
  :: !g_n ->
     /* 98-108 TYPE where none is free: only lock tokens are stored here */
     if
     :: waiter != 0 ->                                   /* 109-113 TIME (unless read at 61-63); 114 list_waiter: */
        if
        :: wsc[W(m, 0, waiter)] == 0 -> wsc[W(m, 0, waiter)] = score  /* lib/list_waiter.lua 14-15 ZADD wake NX score waiter (pcall) */
        :: else -> skip
        fi;
        wdl[W(m, 0, waiter)] = LAPSE                     /* lib/list_waiter.lua 16-19 ZADD wake_until now + lapse waiter (pcall) */
        /* lib/list_waiter.lua 20-22 PEXPIRE the lists to one and a half
           lapses where less than one is left: not modelled */
     :: else -> skip
     fi;
     g_r = R_NO                                          /* 116 return false */
  :: else -> skip
  fi;
  g_n = 0;
  g_kept = 0
}

/* No hold is released or extended by a token that does not name it: around
   every release, extend and clean-up, each slot that held another token
   still holds it, with the same life. With time, a step may let time pass
   (env.pml MAY_PASS): that slot's life may shorten, or run out and the key
   go, which a wrongful DEL also looks like; the exact check is the
   NO_TIME runs'. */
#ifdef NO_TIME
#define NO_TIME_RUN 1
#else
#define NO_TIME_RUN 0
#endif
hidden byte g_tok[P], g_life[P];
inline note_others(m) {
  for (g_i : 0 .. P - 1) { g_tok[g_i] = key[K(m, g_i)]; g_life[g_i] = kdl[K(m, g_i)] }
  g_i = 0
}
inline others_untouched(m, token) {
  for (g_i : 0 .. P - 1) {
    assert(g_tok[g_i] == 0 || g_tok[g_i] == token ||
           (key[K(m, g_i)] == g_tok[g_i] &&
            (kdl[K(m, g_i)] == g_life[g_i] || (kdl[K(m, g_i)] < g_life[g_i] && !NO_TIME_RUN))) ||
           (key[K(m, g_i)] == 0 && kdl[K(m, g_i)] == 0 && !NO_TIME_RUN));
    g_tok[g_i] = 0; g_life[g_i] = 0
  }
  g_i = 0
}

inline run_script(m) {
  if
  :: OP_CODE(g_op) == OP_SEMACQ -> semaphore_acquire(m, g_a, g_b, SCORE_OF(g_d), FIRST_OF(g_d))
  :: OP_CODE(g_op) == OP_MREL ->
     note_others(m);
#ifdef RELEASE_EVERY_SLOT
     /* Seeded bug: a permit's release DELs every slot, whoever holds it. */
     if
     :: g_b != REL_PASS && g_b != REL_CLEANUP ->
        for (g_i : 0 .. P - 1) { key[K(m, g_i)] = 0; kdl[K(m, g_i)] = 0 };
        g_i = 0; g_r = R_YES; g_v = 1
     :: else -> mutex_release(m, OP_KEY(g_op), 0, g_a, g_b, g_d)
     fi;
#else
     mutex_release(m, OP_KEY(g_op), 0, g_a, g_b, g_d);
#endif
     others_untouched(m, g_a)
  :: OP_CODE(g_op) == OP_EXT ->
     note_others(m);
     extend_string(m, OP_KEY(g_op), g_a, g_b);
     others_untouched(m, g_a)
  :: OP_CODE(g_op) == OP_RELALL ->
     note_others(m);
     release_all(m, g_a, g_b, 0);
     others_untouched(m, g_a)
  :: OP_CODE(g_op) == OP_WLEAVE -> leave_wake_list(m, 0, g_a)
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

#define ALL_SLOTS ((1 << P) - 1)
/* release_permits(keep) (kinds.cpp): release_all.lua '' over every slot
   but `keep` (P: none), on the masters in `mask`. */
#define RELEASE_PERMITS(t, mask, tok, keep) \
  cleanup_on(t, mask, OP_RELALL, tok, ALL_SLOTS & ~(1 << (keep)), 0)

proctype Task(byte t) {
  byte k, att, tok, waiter, score, tg, ext, first, pos, retake, quiet_tok;
  byte own;              /* the holder's own wake-list entry, for its release */
  bool plain, won, held_back, onlist;

next:
  if
  :: k == ACQS -> goto done
  :: else -> skip
  fi;
  /* acquire_op::start: as the mutex's (mutex.pml); asking again at once
     after a quiet release tries the slot it gave back first
     (note_permit_asked) */
  atomic {
    asks++; score = asks; att = 0; ext = 0; listed[t] = 0;
#ifndef NO_WAKE_LISTS
    waiter = WAITER(t, k);
#endif
    wcur[t] = waiter; wk[t] = 0; ntk[t * 2] = 0; ntk[t * 2 + 1] = 0; nnx[t] = 0
  };
attempt:
  /* acquire_op::attempt: a new token, a first slot (random_below, or the
     slot given back for a retake), the plain retry of a woken waiter
     (semaphore_acquire.lua with no waiter id) */
  atomic {
    ROOM(t) ->
    att = (FOREVER(t) -> (att % ATTS) + 1 : att + 1);   /* task 0 reuses its tokens in turn */
    tok = TOKEN(t, k, att);
#ifdef LIVENESS
    news_reset(t);
#endif
    if
    :: att == 1 && held_back -> first = retake
#ifdef FIRST_FIXED
    :: else -> first = (t == NT - 1)
#else
    :: else ->
       if
       :: first = 0
       :: first = 1
       fi
#endif
    fi;
    plain = wk[t] && listed[t] > 0;
    wk[t] = 0; choosing[t] = 1;
    if
    :: plain -> round_start(t, R_EARLY, TTL, OP_SEMACQ, tok, 0, 16 * first)
    :: else -> round_start(t, R_EARLY, TTL, OP_SEMACQ, tok, waiter, score + 16 * first)
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
    choosing[t] = 0;
    if
    :: !plain && no[t] >= Q ->
       listed[t] = ((rdl[t] + LAPSE / 2 > TTL) -> (rdl[t] + LAPSE / 2 - TTL) : 0);
       onlist = 1
    :: else -> onlist = 0
    fi;
    won = ((BEST(t) >= Q || (COUNTED_ANY && yes[t] >= Q)) && IN_TIME(t));
    /* client_impl::permit_retake_decided: won, the held-back wake-up is
       dropped (the slot is taken again, its holder's release wakes the
       next); else it goes out at once */
    if
    :: att == 1 && held_back ->
       if
       :: !won -> cleanup_on(t, ALL_MASK, ON_KEY(OP_MREL, retake), quiet_tok, REL_PASS, 0)
       :: else -> skip
       fi;
       held_back = 0
    :: else -> skip
    fi;
    if
    :: won ->
       pos = WINNER(t);
       own = (plain -> waiter : 0);
       held[t] = 1; wend[t] = rdl[t]; slot[t] = SLOT(first, pos);
       wcur[t] = 0;
       if
       :: !plain && waiter != 0 -> cleanup_on(t, MASK_OF(t, S_NO), OP_WLEAVE, waiter, 0, 0)
       :: else -> skip
       fi;
       /* acquire_op::acquired: the masters that granted another slot, or
          may have (failed), give it back. Those still to answer are left
          to on_late_grant, which gives back a late grant of another slot:
          folded in here (README.md), sent now behind the attempt on the
          same connection, where it runs after that grant as on_late_grant's
          would. */
       RELEASE_PERMITS(t, ALL_MASK & ~MASK_OF(t, S_NO) & ~(
         ((st[t * N] == S_YES && rv[t * N] == pos)) |
         ((st[t * N + 1] == S_YES && rv[t * N + 1] == pos) << 1) |
         ((st[t * N + 2] == S_YES && rv[t * N + 2] == pos) << 2)), tok, slot[t])
    :: else ->
       /* acquire_op::abandon_attempt: release_permits (no keep) on every
          master that did not refuse */
       RELEASE_PERMITS(t, MAY_HOLD(t), tok, P)
    fi;
    rdl[t] = 0
  };
  if
#ifdef LIVENESS
  :: won && FOREVER(t) -> goto done   /* the property reached: it holds for ever */
  :: won && !FOREVER(t) -> goto hold
#else
  :: won -> goto hold
#endif
  :: !won && !FOREVER(t) && att >= ATTS ->
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
#ifdef NO_RELEASE
  goto done;
#endif
  do
  TASK_CRASH(t)             /* holding */
#if !defined(NO_TIME) && !defined(LIVENESS)
  /* run_extend: extend.lua on the slot; the window moves later only */
  :: ext < 1 ->
     atomic {
       ext++;
       WAIT_A_STEP(t);
       if
       :: round_start(t, R_SETTLED, TTL, ON_KEY(OP_EXT, slot[t]), tok, TTL, 0)
       :: round_start(t, R_SETTLED, SHORT, ON_KEY(OP_EXT, slot[t]), tok, SHORT, 0)
       fi
     };
     await_round(t);
     atomic {
       if
       :: yes[t] >= Q && IN_TIME(t) && IN_CS(t) -> wend[t] = MAX(wend[t], rdl[t])
       :: else -> skip
       fi;
       rdl[t] = 0
     }
#endif
  /* start_release: no validity from the moment it is asked; the slot's
     mutex_release.lua '1' on every master (taking down the holder's own
     entry if it won by a plain retry) */
  :: atomic {
       held[t] = 0; wend[t] = 0;
       cleanup_on(t, ALL_MASK, ON_KEY(OP_MREL, slot[t]), tok, REL_WAKE, own);
       k++
     };
     goto next
#ifndef NO_QUIET
  /* a client that retakes permits (client_impl::retakes_permits) releases
     quietly ('quiet': names no one, answers 3 where a live waiter heads
     the list) and, when one answered 3 or one had not answered by the
     decision, holds the wake-up back (note_permit_release); a release
     round settles its failure (release.cpp) */
  :: atomic {
       held[t] = 0; wend[t] = 0;
       round_start(t, R_SETTLED, TTL, ON_KEY(OP_MREL, slot[t]), tok, REL_QUIET, own)
     };
     await_round(t);
     atomic {
       held_back = (rv[t * N] == 3 || rv[t * N + 1] == 3 || rv[t * N + 2] == 3 ||
                    MASK_OF(t, S_PEND) != 0 || MASK_OF(t, S_FAIL) != 0);
       retake = slot[t]; quiet_tok = tok;
       rdl[t] = 0; k++
     };
     goto quiet
#endif
  od;
quiet:
  /* The held-back wake-up: sent when the window ends (send_due_wakes) with
     'pass' and the quiet release's token, unless the client asks again by
     then (its next acquisition's first attempt decides: above). */
  if
  :: held_back && k < ACQS -> goto next
  :: held_back ->
     atomic { cleanup_on(t, ALL_MASK, ON_KEY(OP_MREL, retake), quiet_tok, REL_PASS, 0); held_back = 0 };
     goto next
  :: !held_back -> goto next
  fi;
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
    RUN_ENV;
    for (g_i : 0 .. NT - 1) { run Task(g_i) };
    g_i = 0
  }
}

/* Never more than P holders: no more than P tasks each holding a permit
   inside its validity window (a monitor that can fail in every state). */
#define IN_CS_COUNT (IN_CS(0) + IN_CS(1) + IN_CS(2))
active proctype permits() {
end:
  atomic { IN_CS_COUNT > P -> assert(false) }
}
#ifdef LIVENESS
/* Liveness (README.md, "Liveness"): nothing stays blocked after every
   holder crashed and the ttls passed: task 0, retrying without bound,
   gets a permit whatever the others did (hold both, crash anywhere). */
ltl acquires { <> held[0] }
#endif
