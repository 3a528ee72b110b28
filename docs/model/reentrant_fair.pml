/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reentrant and the fair lock (docs/algorithm.md, sections 7, 9 and
 * 11): one hash per master, the owner's field with its count and the
 * ':hold-id' of the request that took the hold; fair: the queue (score),
 * the waiters' terms (poll id), the release's hand-over to the head and the
 * head's confirmation (fair_dequeue.lua). Environment: env.pml,
 * env_procs.pml; what is checked: README.md.
 *
 * Without time (NO_TIME): no key expires, no waiter's drop-out deadline
 * passes (the stale sweeps never fire), a hold's window lasts until its
 * release; the round's validity is mutex.pml's.
 *
 * Reentrant (default): tasks 0 and 1 are one owner on client 0 (an async
 * task that starts the same critical section twice), task 2 another owner
 * on client 1. Task 1 waits for task 0's acquisition (client_impl::
 * owner_lines, src/locks/acquire_start.cpp), then re-enters the hold it
 * took or, if none, acquires in its turn.
 * FAIR: fair_acquire.lua, three owners on three clients, one acquisition
 * each, won by polls or by hand-overs.
 *
 * Switch TWO_FIRSTS (seeded bug, reentrant): the client before the owner
 * lines (7a05ebd, issue 33): task 1's first acquisition runs at once, beside
 * task 0's; both are granted (one owner field), and the release of one
 * frees the other's hold. The scripts did not change with that fix: the
 * switch restores the client's old step, not a script.
 *
 * FAIR switches: CHECK_FIFO asserts "no overtaking once queued" at every
 * win; LATE_ARRIVAL makes the last owner ask only once owner 1 is in line
 * on a quorum, the case FIFO is about.
 *
 * The fast path (issue 38): a first acquisition's poll on a master where
 * the lock is free and nobody is in line is granted there without standing
 * in line (answered V_OUT_OF_LINE); a winner by polls sends its leave
 * (fair_dequeue.lua) only to the other masters, and a failed poll's
 * clean-up (REL_PLACE) puts it in line there, as it does where a release
 * handed it the lock.
 * Switch FAST_NO_REQUEUE (seeded bug, FAIR): the clean-up of a master that
 * granted the poll out of line carries no place (no ARGV[7]): the waiter is
 * left neither holding nor in line there.
 * Switch NO_FAST (FAIR): fair_acquire.lua before the fast path, for
 * comparison (the script hash above is the current one's).
 * Holds and places do not lapse here (NO_TIME). That stands for what the
 * script guarantees: the fast path is taken only when the ttl is at least
 * the queue timeout, so a hold granted out of line lasts as long as the
 * place it replaces would have.
 * Switch FAST_SHORT_TTL (seeded bug, FAIR): the fast path without that
 * guard (ttl shorter than the queue timeout): a hold granted out of line
 * may lapse while its waiter waits after a failed poll, before its
 * clean-up is served (process Lapse); the clean-up then finds nothing to
 * give back and puts no place back, and a later caller wins first.
 * Switch HANDED_SHORT_TTL (FAIR, a known limit, not a CTest run; with
 * NO_FAST it fails too): a hand-over's hold, which lives min(ttl, the head's
 * queue deadline), lapsing the same way; with a ttl at least the queue
 * timeout it lives exactly as long as the place it took (docs/algorithm.md,
 * section 11, "Out of line where handed").
 *
 * Switch OLD_GIVE_BACK (seeded bug, FAIR): the clean-up of a failed poll
 * before issue 35's fix: it gives back a hold a release handed the waiter
 * (which took it out of line there) and leaves it neither holding nor in
 * line on that master; a later caller is granted it and wins while the
 * waiter still waits (CHECK_FIFO fails).
 *
 * LIVENESS (FAIR; checked with pan -a -f, README.md "Liveness"): no owner
 * gives up; after its ATTS timer polls a waiter polls again only when a
 * release names it (a wake-up of a head whose terms carry no ttl, or a
 * hand-over its ledger does not count: on_handed's release_heard), and
 * the LTL property `served` says every owner acquires. Every reply
 * arrives, each connection is served (PER_CONNECTION).
 * Switch RELEASE_NOT_LEAVING (seeded liveness bug, LIVENESS): the holder's
 * last release sent without ARGV[4] '1' (leaving): reentrant_release.lua
 * deletes the hold and passes the lock on to no one, and the waiters that
 * spent their timer polls wait for ever.
 *
 * Script hashes (SHA1 as sent: cmake/lua_text.cmake), checked by
 * test/model/check_script_hashes.cmake:
 * @script lua/reentrant_acquire.lua 8e7095293d67dbabed2ab19857d8bdb5113b33c4
 * @script lua/reentrant_release.lua 8f3697a881df8268a3bc700a8fd97725419e726e
 * @script lua/reentrant_undo.lua e1bdc864b085ae53fa526f18721d5c5b72dfb711
 * @script lua/fair_acquire.lua 874eea1260446578e8d4e11b4790159630c58fcd
 * @script lua/fair_dequeue.lua bb972acf46af5e63512243a93ce3e3fb98072add
 */
#define NO_TIME
#define NT 3
#ifdef LIVENESS
#define LIVE
#define PER_CONNECTION
#endif
#ifdef FAIR
#define NCL 3
#define CLIENT_OF(t) (t)
#define OWNER_OF(t) (t)
#define NO 3              /* owners */
#else
#define NCL 2
#define CLIENT_OF(t) ((t) == 2 -> 1 : 0)
#define OWNER_OF(t) ((t) == 2 -> 1 : 0)
#define NO 2
#endif
#ifndef ATTS
#define ATTS 2            /* attempts (polls) of a first acquisition */
#endif
#define TTL 2
/* Room for every request one client may have in flight on a connection
   (two tasks on client 0: rounds, clean-ups, releases): a send that blocks
   inside an atomic step would let another process reuse env.pml's scratch
   loop index (README.md, "A trap"). */
#define QCAP 4

#include "env.pml"

/* What a master holds: the hash R (each owner's count, 0: no field, and
   ':hold-id', 0 with no key); fair: the queue {R}:queue (each owner's score,
   0: not in line) and the terms {R}:terms (the poll id; every poll here is
   unfenced, so its terms carry a ttl and it may be handed the lock; terms
   put back by a clean-up carry none, `tnt`: a release only wakes that
   head). The deadlines {R}:timeout are not modelled (NO_TIME): no waiter
   goes stale. */
byte cnt[N * NO];
byte hid[N];
byte qsc[N * NO];
byte tp[N * NO];
bool tnt[N * NO];
#define C(m, o) ((m) * NO + (o))
#if defined(FAST_SHORT_TTL) || defined(HANDED_SHORT_TTL)
#define LAPSES
/* fst: owner o's hold on m is one that may lapse while the place it
   replaced would not have (FAST_SHORT_TTL: a grant out of line;
   HANDED_SHORT_TTL: a hand-over) and is still that hold; lapsable: the
   task's last poll failed and it waits, its clean-up maybe still on the
   way. A lapse (the hold's PEXPIRE passing) deletes the hold. */
bool fst[N * NO];
bool lapsable[NT];
#define FST_SET(m, o) fst[C(m, o)] = 1
#define FST_CLR(m, o) fst[C(m, o)] = 0
#else
#define FST_SET(m, o) skip
#define FST_CLR(m, o) skip
#endif
#if NO > 2
#define KEY_EXISTS(m) (cnt[C(m, 0)] != 0 || cnt[C(m, 1)] != 0 || cnt[C(m, 2)] != 0)
#define LINE_EMPTY(m) (qsc[C(m, 0)] == 0 && qsc[C(m, 1)] == 0 && qsc[C(m, 2)] == 0)
#else
#define KEY_EXISTS(m) (cnt[C(m, 0)] != 0 || cnt[C(m, 1)] != 0)
#define LINE_EMPTY(m) (qsc[C(m, 0)] == 0 && qsc[C(m, 1)] == 0)
#endif
/* A poll's grant out of line (fair_acquire.lua's 'FAST'), in the value its
   answer carries (rv; a grant in line carries 0) */
#define V_OUT_OF_LINE 1
/* Task t's round was granted out of line on master m; the masters where
   (bits) */
#define OUT_OF_LINE_AT(t, m) (st[(t) * N + (m)] == S_YES && rv[(t) * N + (m)] == V_OUT_OF_LINE)
#define OUT_OF_LINE_MASK(t) (OUT_OF_LINE_AT(t, 0) | (OUT_OF_LINE_AT(t, 1) << 1) | (OUT_OF_LINE_AT(t, 2) << 2))
/* owner a is before owner b in line on master m (ZRANGE, ZRANK: by score,
   ties by member) */
#define BEFORE(m, a, b) (qsc[C(m, a)] < qsc[C(m, b)] || (qsc[C(m, a)] == qsc[C(m, b)] && (a) < (b)))

/* Operations */
#define OP_RACQ  1   /* reentrant_acquire.lua: a = owner, b = hold id, d = 1 re-enter / 0 first */
#define OP_FACQ  2   /* fair_acquire.lua: a = owner, b = poll (hold) id, d = score, 0 to re-enter */
#define OP_REL   3   /* reentrant_release.lua: a = owner, b = hold id, d = REL_LAST | REL_LEAVE */
#define OP_UNDO  4   /* reentrant_undo.lua: a = owner */
#define OP_DEQ   5   /* fair_dequeue.lua: a = owner, b = hold id */
#define REL_LAST  1  /* ARGV[3] '1': the client's last level */
#define REL_LEAVE 2  /* ARGV[4] '1': leaving for good (a holder's last release, a waiter giving up) */
#define REL_PLACE 4  /* ARGV[7], ARGV[8]: a fair waiter's clean-up, with its score (osc) */

/* Client side, per task: the hold it uses (lock_state: its count, hold id,
   released), indexed by the task whose acquisition took it; the fair
   hand-over ledger (src/waiting/fair_handover.hpp: counted grants, the first
   poll id a grant on each master must name); waiting for a hand-over. */
byte lcnt[NT], lhid[NT];
bool lrel[NT];
bool hg[NT * N];
byte fvp[NT * N];
bool waiting[NT];
byte nreq[NCL];          /* client_impl::next_request_id */
byte asks;               /* the fair score: when the caller asked */
byte osc[NO];            /* each owner's score (acquire_op::queue_score_), sent with its clean-ups */
bool acq_done[NT];       /* the task's acquisition completed (won or failed) */
byte ahead[NT];          /* FIFO: waiters in line on a quorum when the task asked (bits) */
#ifdef LIVENESS
bool woken[NT];          /* a release named the waiter (release_heard): it polls again */
#define WOKEN(o) woken[o] = waiting[o]
/* Poll ids cycle through 1 .. IDS (finite state for polls without
   bound); every id compared with another lies within IDS / 2 of it (the
   ids of one owner stored on a master are its latest requests there, at
   most QCAP behind the last sent; the ledger's bound is dropped once a
   poll has run on that master), so "later" is a difference modulo IDS.
   0 is no id. */
#define IDS 16
#define NEXT_ID(i) ((i) % IDS + 1)
#define LATER(a, b) ((a) != 0 && (b) != 0 && ((a) + IDS - (b)) % IDS != 0 && ((a) + IDS - (b)) % IDS < IDS / 2)
/* Each connection of task t has room for what its next step sends (one
   request per connection): polls without bound otherwise fill one and
   block inside an atomic step (README.md, "A trap for the next model"). */
#define ROOM(t) len(rq[CLIENT_OF(t) * N]) < QCAP && len(rq[CLIENT_OF(t) * N + 1]) < QCAP && \
                len(rq[CLIENT_OF(t) * N + 2]) < QCAP ->
#else
#define NEXT_ID(i) ((i) + 1)
#define LATER(a, b) ((a) > (b))
#define ROOM(t)
#define WOKEN(o) skip
#endif
/* Scratch of one master step (env.pml's g_b, g_x are a request's argument
   and pass_on's): not part of the state. */
hidden byte h_leave, h_kind, h_later;
/* The masters where owner o has a place: in line, or a hold (a grant, a
   hand-over) */
#define PLACE(m, o) (qsc[C(m, o)] != 0 || cnt[C(m, o)] != 0)
#define PLACES(o) (PLACE(0, o) + PLACE(1, o) + PLACE(2, o))
#define HG_COUNT(t) (hg[(t) * N] + hg[(t) * N + 1] + hg[(t) * N + 2])
#define HG_MASK(t) (hg[(t) * N] | (hg[(t) * N + 1] << 1) | (hg[(t) * N + 2] << 2))

/* PUBLISH '+<poll> <head>' on the head's client channel, heard by its
   acquire_op (acquire_wake.cpp on_handed, handover_ledger::handed): counted
   if it names a poll sent after the waiter last released on that master. */
inline heard_handed(m, o, poll) {
  if
  :: waiting[o] && !LATER(fvp[o * N + m], poll) -> hg[o * N + m] = 1
  :: else -> WOKEN(o)       /* not counted: release_heard, a poll */
  fi
}

/* reentrant_release.lua pass_on (lines 51-89) on master m: the head of
   the line (lowest score) handed the lock on its terms. */
inline pass_on(m) {
  /* 52-55: no one in line here (39 TYPE KEYS[2] is not 'zset', read before the leave):
     the announcement (with announce) only, no TIME, sweep or head read. No statement: with
     LINE_EMPTY(m) the search below finds no head, the same outcome. */
  /* 56-62 TIME (server_ms, 42-45), stale heads swept: no deadline passes (NO_TIME) */
  g_k = NO;
  for (g_j : 0 .. NO - 1) {                               /* 63 ZRANGE KEYS[2] 0 0 */
    if
    :: qsc[C(m, g_j)] != 0 && (g_k == NO || BEFORE(m, g_j, g_k)) -> g_k = g_j
    :: else -> skip
    fi
  }
  g_j = 0;
  if
  :: g_k == NO -> skip                                    /* PUBLISH: reentrant wake-ups not modelled */
  :: g_k != NO && tnt[C(m, g_k)] -> WOKEN(g_k)            /* terms without a ttl: PUBLISH head, a wake-up (LIVENESS) */
  :: else ->                                              /* terms, deadline: there */
     g_x = tp[C(m, g_k)];
#ifdef HANDED_SHORT_TTL
     cnt[C(m, g_k)] = 1; hid[m] = g_x; FST_SET(m, g_k);   /* 75-76, for min(ttl, deadline - now) < its place's life */
#else
     cnt[C(m, g_k)] = 1; hid[m] = g_x; FST_CLR(m, g_k);   /* 76 HSET KEYS[1] head 1 :hold-id poll */
#endif
     /* 77 PEXPIRE: the key's life, not modelled (NO_TIME) */
     qsc[C(m, g_k)] = 0; tp[C(m, g_k)] = 0;               /* 82-84 ZREM, ZREM, HDEL */
     heard_handed(m, g_k, g_x);                           /* 85 PUBLISH channel '+poll head' */
     g_x = 0
  fi;
  g_k = 0
}

/* reentrant_acquire.lua on master m. */
inline reentrant_acquire(m, o, id, reenter) {
  /* 19-22 TYPE: only a hash is stored here */
  g_n = (cnt[C(m, o)] != 0);                              /* 28 HEXISTS: ours */
  if
  :: g_n && LATER(hid[m], id) -> g_r = R_NO                     /* 29-31 HGET :hold-id */
  :: else ->
     if
     :: reenter && !g_n -> g_r = R_NO                     /* 34 */
     :: reenter && g_n ->
        cnt[C(m, o)]++;                                   /* 35 HINCRBY */
        hid[m] = id;                                      /* 36 HSET :hold-id */
        g_r = R_YES                                       /* 37 lengthen: not modelled (NO_TIME) */
     :: !reenter && KEY_EXISTS(m) && !g_n -> g_r = R_NO   /* 40-42 */
     :: else ->
        cnt[C(m, o)] = 1; hid[m] = id;                    /* 44 HSET owner 1 :hold-id */
        g_r = R_YES                                       /* 45 lengthen; 46-48 description: not modelled */
     fi
  fi;
  g_n = 0
}

/* fair_acquire.lua on master m (score 0: a re-entry). */
inline fair_acquire(m, o, id, score) {
  h_kind = KEY_EXISTS(m);                                 /* 39 EXISTS; 51 TYPE: kind ~= 'none' */
  g_n = (cnt[C(m, o)] != 0);                              /* 70-71 HMGET: ours */
  if
#ifndef NO_FAST
  :: score != 0 && !h_kind && LINE_EMPTY(m) ->            /* 38-39 EXISTS, ZCARD: free, nobody in line */
#ifdef FAST_SHORT_TTL
     cnt[C(m, o)] = 1; hid[m] = id; FST_SET(m, o);        /* 40 HSET owner 1 :hold-id; 41-44 PEXPIRE, description */
#else
     cnt[C(m, o)] = 1; hid[m] = id; FST_CLR(m, o);        /* 40 HSET; the hold outlives its place (ttl >= queue timeout) */
#endif
     g_r = R_YES; g_v = V_OUT_OF_LINE                     /* 48 'FAST' */
#endif
  /* 51-54 TYPE; 55-63 TIME, stale waiters swept: none (NO_TIME) */
  :: g_n && LATER(hid[m], id) -> g_r = R_NO                     /* 72-74 */
  :: else ->
     if
     :: score == 0 && !g_n -> g_r = R_NO                  /* 76 */
     :: score == 0 && g_n ->
        cnt[C(m, o)]++; hid[m] = id; g_r = R_YES          /* 77-80 HINCRBY, HSET :hold-id */
     :: score != 0 && LATER(tp[C(m, o)], id) -> g_r = R_NO      /* 84-87 HGET terms: a later poll ran */
     :: else ->
        qsc[C(m, o)] = score;                             /* 97-98 stand_in_line: lib/fair_line.lua 16 ZADD KEYS[3] */
        tp[C(m, o)] = id; tnt[C(m, o)] = 0;               /* lib/fair_line.lua 17-18 ZADD KEYS[4], HSET KEYS[5] '<poll> <ttl>' */
        /* lib/fair_line.lua 19-22 PEXPIRE of the line: not modelled (NO_TIME) */
        g_k = 0;                                          /* 99 ZRANK */
        for (g_j : 0 .. NO - 1) {
          if
          :: g_j != o && qsc[C(m, g_j)] != 0 && BEFORE(m, g_j, o) -> g_k++
          :: else -> skip
          fi
        }
        g_j = 0;
        if
        :: g_n || (!h_kind && g_k == 0) ->                   /* 100 */
           cnt[C(m, o)] = 1; hid[m] = id; FST_CLR(m, o);  /* 104 HSET owner 1 :hold-id */
           g_r = R_YES                                    /* 105 PEXPIRE; 106-112 */
        :: else -> g_r = R_NO; g_v = g_k                  /* 114 -1 - rank */
        fi;
        g_k = 0
     fi
  fi;
  g_n = 0; h_kind = 0
}

/* reentrant_release.lua on master m. */
inline reentrant_release(m, o, id, flags) {
  /* 28-30: no read-write field here */
  h_leave = ((flags & REL_LAST) && (flags & REL_LEAVE));  /* 33 leaving */
  /* 39 TYPE KEYS[2] (line: a sorted set; the model's keys hold no other type): the leave (91-102: HGET terms, ZREM) is
     skipped when no one stands in line here. No statement: a place and its
     terms are written and cleared together here (no deadlines, NO_TIME), so
     with LINE_EMPTY(m) the leave below finds no terms and nothing to remove. */
  if                                                      /* 91-92 HGET terms */
  :: h_leave && !LATER(tp[C(m, o)], id) ->
     if
     :: qsc[C(m, o)] != 0 -> qsc[C(m, o)] = 0; tp[C(m, o)] = 0; tnt[C(m, o)] = 0  /* 98-100 ZREM, ZREM, HDEL */
     :: else -> skip
     fi
  :: else -> skip
  fi;
  if                                                      /* 104 HMGET owner :hold-id */
  :: cnt[C(m, o)] == 0 || LATER(hid[m], id) ->                  /* 105 */
     if
     :: h_leave && !KEY_EXISTS(m) -> pass_on(m)               /* 108 EXISTS; pass_on(false) */
     :: else -> skip
     fi;
     g_r = R_NO                                           /* 109 */
  :: else ->
     if
     :: flags & REL_LAST ->
        for (g_i : 0 .. NO - 1) { cnt[C(m, g_i)] = 0; FST_CLR(m, g_i) }; g_i = 0;
        hid[m] = 0;                                       /* 112 DEL KEYS[1] */
        /* 113-114 the description: not modelled */
        if
        :: h_leave -> pass_on(m)                          /* 116 pass_on(true) */
#ifndef OLD_GIVE_BACK
        :: !h_leave && (flags & REL_PLACE) && qsc[C(m, o)] == 0 ->
           /* 117 ZSCORE: not in line (a release handed us this hold); back in
              line with our score, terms naming this clean-up's poll without
              a ttl (125 stand_in_line: lib/fair_line.lua 16-18 ZADD, ZADD,
              HSET; 19-22 PEXPIRE not modelled) */
           qsc[C(m, o)] = osc[o]; tp[C(m, o)] = id; tnt[C(m, o)] = 1
#endif
        :: else -> skip
        fi
     :: else ->
        if
        :: cnt[C(m, o)] > 1 -> cnt[C(m, o)]--             /* 129-131 HINCRBY -1 */
        :: else -> skip
        fi
     fi;
     g_r = R_YES                                          /* 127, 132 */
  fi;
  h_leave = 0
}

/* reentrant_undo.lua on master m (lines 5-9). */
inline reentrant_undo(m, o) {
  if
  :: cnt[C(m, o)] > 1 -> cnt[C(m, o)]--; g_r = R_YES      /* 5-7 HEXISTS, HGET, HINCRBY -1 */
  :: else -> g_r = R_NO                                   /* 9 */
  fi
}

/* fair_dequeue.lua on master m: the winner's leave, and its confirmation
   (the ttl to extend to and the description: not modelled). */
inline fair_dequeue(m, o, id) {
  if
  :: LATER(tp[C(m, o)], id) -> g_r = R_NO                       /* 21-22 HGET terms */
  :: else ->
     qsc[C(m, o)] = 0; tp[C(m, o)] = 0; tnt[C(m, o)] = 0; /* 23-25 ZREM, ZREM, HDEL */
     if
     :: cnt[C(m, o)] != 0 && !LATER(hid[m], id) -> g_r = R_YES  /* 31-40 HEXISTS, HGET :hold-id */
     :: else -> g_r = R_NO                                /* 42 */
     fi
  fi
}

/* Owners with a field on master m (the hash belongs to one owner). */
inline owners_on(m, into) {
  into = 0;
  for (g_i : 0 .. NO - 1) {
    if
    :: cnt[C(m, g_i)] != 0 -> into++
    :: else -> skip
    fi
  }
  g_i = 0
}

inline run_script(m) {
  if
  :: g_op == OP_RACQ ->
     reentrant_acquire(m, g_a, g_b, g_d);
     /* Re-entry only by the owner: a re-entry granted where its field is. */
     assert(!(g_d && g_r == R_YES) || cnt[C(m, g_a)] > 1)
  :: g_op == OP_FACQ ->
     g_y = (g_d == 0);
     fair_acquire(m, g_a, g_b, g_d);
     assert(!(g_y && g_r == R_YES) || cnt[C(m, g_a)] > 1);
     g_y = 0
  :: g_op == OP_REL ->
     /* No hold released by a token that does not name it: a release by
        owner o with hold id h leaves a hold taken by a later request of o
        (':hold-id' > h). (Another owner's field cannot be beside o's: one
        owner per hash, asserted below; pass_on writes the head's field
        only where the key is gone.) */
     h_later = cnt[C(m, g_a)] != 0 && LATER(hid[m], g_b);
     reentrant_release(m, g_a, g_b, g_d);
     assert(!h_later || cnt[C(m, g_a)] != 0);
     h_later = 0
  :: g_op == OP_UNDO -> reentrant_undo(m, g_a)
  :: g_op == OP_DEQ -> fair_dequeue(m, g_a, g_b)
  fi;
  /* One owner per hash. */
  owners_on(m, g_x);
  assert(g_x <= 1);
  g_x = 0
}
/* A restart empty: only when nothing is held or queued there (no time passes). */
inline forget(m) {
  for (g_i : 0 .. NO - 1) {
    if
    :: cnt[C(m, g_i)] != 0 || qsc[C(m, g_i)] != 0 -> g_n = 0
    :: else -> skip
    fi
  }
  g_i = 0;
  if
  :: g_n -> hid[m] = 0
  :: else -> skip
  fi
}
inline advance_model(cl, d) { skip }

#include "env_procs.pml"

#define OWNER_HOLDS(o) ((OWNER_OF(0) == (o) && IN_CS(0)) || (OWNER_OF(1) == (o) && IN_CS(1)) || (OWNER_OF(2) == (o) && IN_CS(2)))

/* Release one level of hold s (release.cpp): no validity from the moment it
   is asked; the last level (the client's count) deletes the hold and
   leaves the line, the others lower the masters' counts. */
inline release_level(t, s) {
  held[t] = 0; wend[t] = 0;
  lcnt[s]--;
  if
#ifdef RELEASE_NOT_LEAVING
  :: lcnt[s] == 0 -> lrel[s] = 1; cleanup_on(t, ALL_MASK, OP_REL, OWNER_OF(t), lhid[s], REL_LAST)
#else
  :: lcnt[s] == 0 -> lrel[s] = 1; cleanup_on(t, ALL_MASK, OP_REL, OWNER_OF(t), lhid[s], REL_LAST | REL_LEAVE)
#endif
  :: else -> cleanup_on(t, ALL_MASK, OP_REL, OWNER_OF(t), lhid[s], 0)
  fi
}

#ifndef FAIR
/* A reentrant task: a first acquisition (ATTS attempts, each a new hold id;
   a refused round cleaned up where it may hold: reentrant_release.lua '1'
   '0', release_abandoned), or task 1's re-entry of the hold task 0 took;
   hold; release one level. */
proctype Task(byte t) {
  byte att, tg, s, id;
  bool won;
  s = t;
#ifndef TWO_FIRSTS
  /* client_impl::owner_lines: behind the owner's acquisition in flight */
  if
  :: t == 1 ->
     acq_done[0];
     if
     :: atomic { held[0] && !lrel[0] -> s = 0 }; goto reenter
     :: atomic { !(held[0] && !lrel[0]) -> skip }
     fi
  :: else -> skip
  fi;
#endif
attempt:
  atomic {
    att++; nreq[CLIENT_OF(t)]++; id = nreq[CLIENT_OF(t)];
    round_start(t, R_EARLY, TTL, OP_RACQ, OWNER_OF(t), id, 0)
  };
  await_round(t);
  atomic {
    won = (yes[t] >= Q);
    if
    :: won -> held[t] = 1; wend[t] = 1; lcnt[t] = 1; lhid[t] = id; acq_done[t] = 1
    :: else -> cleanup_on(t, MAY_HOLD(t), OP_REL, OWNER_OF(t), id, REL_LAST)
    fi;
    rdl[t] = 0
  };
  if
  :: won -> goto hold
  :: !won && att < ATTS -> goto attempt     /* the retry timer, or a release heard */
  :: else -> acq_done[t] = 1; goto done
  fi;
reenter:
  /* reentry.cpp: one round, the hold's id, settled; granted only where the
     field is; a failure (or the hold released meanwhile) undoes its own
     increments where they applied */
  atomic { round_start(t, R_SETTLED, TTL, OP_RACQ, OWNER_OF(t), lhid[s], 1) };
  await_round(t);
  atomic {
    won = (yes[t] >= Q && !lrel[s]);
    if
    :: won -> lcnt[s]++; held[t] = 1; wend[t] = 1
    :: else -> cleanup_on(t, MASK_OF(t, S_YES), OP_UNDO, OWNER_OF(t), 0, 0)
    fi;
    rdl[t] = 0
  };
  if
  :: !won -> goto done
  :: else -> skip
  fi;
hold:
  atomic { release_level(t, s) };
done:
  skip
end:
  skip
}
#else
/* A fair task: asks (its score), polls (fair_acquire.lua, ATTS at most,
   each a new poll id), wins by a quorum of polls or of hand-overs (both
   counted together), else cleans up where it may hold (also where it was
   handed the lock) and waits in line; gives up by leaving for good. A
   winner by polls leaves every line (fair_dequeue.lua); a winner by
   hand-overs may send it as its confirmation (the ttl, the description). */
proctype Task(byte t) {
  byte att, tg, id, score;
  bool won, byhand;
#ifdef LATE_ARRIVAL
  /* The FIFO check's case: the last task asks only once task 1 is in
     line on a quorum (or done). A search of every interleaving rarely gets
     there before its cut: its asking first is explored first. */
  if
  :: t == NT - 1 -> atomic { (waiting[1] && PLACES(1) >= Q) || acq_done[1] -> skip }
  :: else -> skip
  fi;
#endif
  atomic {
    asks++; score = asks; osc[OWNER_OF(t)] = score; waiting[t] = 1;
    /* FIFO: who is in line (or holds a place: a grant, a hand-over) on a
       quorum as this caller asks is ahead of it */
    for (g_i : 0 .. NT - 1) {
      if
      :: g_i != t && waiting[g_i] && PLACES(g_i) >= Q -> ahead[t] = ahead[t] | (1 << g_i)
      :: else -> skip
      fi
    }
    g_i = 0
  };
poll:
  atomic {
    ROOM(t)
#ifdef LIVENESS
    woken[t] = 0;
#else
    att++;
#endif
    nreq[t] = NEXT_ID(nreq[t]); id = nreq[t];
#ifdef LAPSES
    lapsable[t] = 0;
#endif
    round_start(t, R_SETTLED, TTL, OP_FACQ, OWNER_OF(t), id, score)
  };
  await_round(t);
  atomic {
    ROOM(t)
    won = (yes[t] >= Q);
#ifdef LIVENESS
    /* Where this poll ran, its terms name it or a later poll, so every
       later hand-over there names a poll >= the ledger's first valid one:
       the ledger's bound is spent (ids stay in LATER's window). */
    for (g_i : 0 .. N - 1) {
      if
      :: st[t * N + g_i] == S_YES || st[t * N + g_i] == S_NO -> fvp[t * N + g_i] = 0
      :: else -> skip
      fi
    }
    g_i = 0;
#endif
    if
    :: !won ->
       /* on_decided: polls granted count with hand-overs */
       for (g_i : 0 .. N - 1) {
         if
         :: st[t * N + g_i] == S_YES -> hg[t * N + g_i] = 1
         :: else -> skip
         fi
       }
       g_i = 0;
       if
       :: HG_COUNT(t) >= Q -> won = 1; byhand = 1
       :: else ->
          /* abandon_attempt: every master that did not refuse, and every
             one that handed us the lock; grants there count again only if
             they name a later poll (handover_ledger::forget); with our
             place in line (fair_place) */
          g_x = MAY_HOLD(t) | HG_MASK(t);
#ifdef OLD_GIVE_BACK
          cleanup_on(t, g_x, OP_REL, OWNER_OF(t), id, REL_LAST);
#elif defined(FAST_NO_REQUEUE)
          cleanup_on(t, g_x & OUT_OF_LINE_MASK(t), OP_REL, OWNER_OF(t), id, REL_LAST);
          cleanup_on(t, g_x & ~OUT_OF_LINE_MASK(t), OP_REL, OWNER_OF(t), id, REL_LAST | REL_PLACE);
#else
          cleanup_on(t, g_x, OP_REL, OWNER_OF(t), id, REL_LAST | REL_PLACE);
#endif
#ifdef LAPSES
          lapsable[t] = 1;
#endif
          for (g_i : 0 .. N - 1) {
            if
            :: g_x & (1 << g_i) -> fvp[t * N + g_i] = NEXT_ID(nreq[t])
            :: else -> skip
            fi;
            hg[t * N + g_i] = 0
          }
          g_i = 0; g_x = 0
       fi
    :: else -> skip
    fi;
    rdl[t] = 0
  };
  if
  :: won -> goto hold
  :: else -> skip
  fi;
  /* in line: a quorum of hand-overs, the poll timer, or giving up */
  if
  :: atomic { HG_COUNT(t) >= Q -> won = 1; byhand = 1 }
#ifdef LIVENESS
  /* the poll timer, without bound; HANDOVER_ONLY: not once in line on a
     quorum */
#ifdef HANDOVER_ONLY
  :: PLACES(t) < Q -> goto poll
#else
  :: goto poll
#endif
#else
  :: att < ATTS -> goto poll
#endif
#ifdef LIVENESS
  /* never gives up: polls again when a release names it */
  :: atomic { woken[t] -> skip }; goto poll
#else
  :: atomic {
       att >= ATTS ->
       /* complete(error): leave every line for good, passing the lock on */
       waiting[t] = 0; acq_done[t] = 1;
       cleanup_on(t, ALL_MASK, OP_REL, OWNER_OF(t), id, REL_LAST | REL_LEAVE)
     };
     goto done
#endif
  fi;
hold:
  atomic {
    ROOM(t)
#ifdef CHECK_FIFO
    /* FIFO: no waiter that was in line on a quorum before we asked is
       still waiting. With OLD_GIVE_BACK it fails: a head's clean-up of a
       failed poll gave back the hold a release handed it, and with it its
       place in line there (README.md, "What the new models found"). */
    assert((ahead[t] & ((waiting[0]) | (waiting[1] << 1) | (waiting[2] << 2))) == 0);
#endif
    waiting[t] = 0; acq_done[t] = 1;
    held[t] = 1; wend[t] = 1; lcnt[t] = 1; lhid[t] = id;
    /* Won by polls: the leave goes to every master but those that granted
       this poll out of line (begin_holding's in_line_on). One yet to answer
       gets it at once here; the client sends it when the answer comes
       (on_late_poll_reply) unless that answer is a grant out of line: after
       the poll on that connection either way, and a leave where we stand in
       no line changes nothing. */
    if
    :: !byhand -> cleanup_on(t, ALL_MASK & ~OUT_OF_LINE_MASK(t), OP_DEQ, OWNER_OF(t), id, 0)
    :: byhand -> skip
    :: byhand -> cleanup_on(t, ALL_MASK, OP_DEQ, OWNER_OF(t), id, 0)   /* the confirmation */
    fi
  };
  atomic { ROOM(t) release_level(t, OWNER_OF(t)) };
done:
  skip
end:
  skip
}
#endif

#ifdef LAPSES
#define LAPSE(m, o) :: atomic { lapsable[o] && waiting[o] && fst[C(m, o)] && cnt[C(m, o)] != 0 && qsc[C(m, o)] == 0 -> \
                      cnt[C(m, o)] = 0; hid[m] = 0; fst[C(m, o)] = 0 }
proctype Lapse() {
end:
  do
  LAPSE(0, 0) LAPSE(0, 1) LAPSE(0, 2)
  LAPSE(1, 0) LAPSE(1, 1) LAPSE(1, 2)
  LAPSE(2, 0) LAPSE(2, 1) LAPSE(2, 2)
  od
}
#endif
init {
  atomic {
    RUN_ENV;
#ifdef LAPSES
    run Lapse();
#endif
    for (g_i : 0 .. NT - 1) { run Task(g_i) };
    g_i = 0
  }
}

/* Exclusion: never two owners each inside a hold's window (the holds of
   one owner are one hold: a re-entry). */
#if NO > 2
#define TWO_OWNERS_HOLD ((OWNER_HOLDS(0) && OWNER_HOLDS(1)) || (OWNER_HOLDS(0) && OWNER_HOLDS(2)) || (OWNER_HOLDS(1) && OWNER_HOLDS(2)))
#else
#define TWO_OWNERS_HOLD (OWNER_HOLDS(0) && OWNER_HOLDS(1))
#endif
active proctype exclusion() {
end:
  atomic { TWO_OWNERS_HOLD -> assert(false) }
}
#ifdef LIVENESS
/* Liveness (README.md, "Liveness"): every owner, in line behind the others
   and never giving up, acquires (the FIFO assertion, with CHECK_FIFO,
   says in which order). */
ltl served { <> (acq_done[0] && acq_done[1] && acq_done[2]) }
#endif
