/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read-write lock (docs/algorithm.md, section 15): rw_acquire.lua and
 * rw_release.lua on N = 3 masters, NR readers and one writer, each on its
 * own client; a hold is the field its token names ('r:<token>' or
 * 'w:<token>', src/locks/adopt.cpp token_shape), the writer's mark keeps
 * readers out while it waits. Environment: env.pml, env_procs.pml.
 *
 * Without time (NO_TIME, unless TIMED): no field lapses, no mark expires;
 * the round's validity is not what this model checks (mutex.pml does), the
 * fields and the mark are. With TIMED: each field's deadline (grant + ttl,
 * on its holder's clock: env.pml, "Time"), the mark's life (MLIFE, on the
 * writer's clock), the round's validity as the client's window, and a
 * retry delay before the writer's second attempt.
 *
 * Switch OLD_RW_RELEASE (seeded bug): the release of a hold by token ran
 * reentrant_release.lua on the rw hash, which DELs the whole key when the
 * token's field is there: one reader's release frees every reader.
 *
 * LIVENESS (implies TIMED): checked with LTL under weak fairness (pan -a
 * -f; README.md, "Liveness"): the writer makes one acquisition and retries
 * without bound (its ATTS tokens reused in turn, as mutex.pml's task 0);
 * the readers make one attempt each and may crash at any step (their
 * requests sent, holding), their fields staying until their clocks, which
 * go on, pass the deadlines. Every reply arrives, in time (LIVE, TIMELY),
 * each connection is served (PER_CONNECTION).
 * COUNT_LAPSED (seeded liveness bug): rw_acquire.lua without its deadline
 * check (lines 35-36): a lapsed field is counted as a live hold.
 *
 * Script hashes (SHA1 as sent: cmake/lua_text.cmake), checked by
 * test/model/check_script_hashes.cmake:
 * @script lua/rw_acquire.lua 7ab5e3faf209f547476051a3f52d19c149884e78
 * @script lua/rw_release.lua e436c9ad103e793eec778b8fd12d71862f862af9
 */
#ifdef LIVENESS
#define TIMED
#define LIVE
#define TIMELY
#define PER_CONNECTION
#define TAGS 5           /* > QCAP */
#define IN_FLIGHT(cl) (rdl[cl] > 0)   /* from its start to its decision (one task per client) */
#define FOREVER(t) ((t) == WRITER)
#else
#define FOREVER(t) 0
#endif
#ifndef TIMED
#define NO_TIME
#endif
#ifndef NR
#define NR 2             /* readers: tasks 0 .. NR - 1; the writer is task NR */
#endif
#define NT (NR + 1)
#define NCL NT
#define CLIENT_OF(t) (t)
#define WRITER NR
#ifndef ATTS
#define ATTS 2           /* the writer's attempts; a reader makes one */
#endif
#define ATTS_OF(t) ((t) == WRITER -> ATTS : 1)
#define TTL 2
#define MLIFE 2          /* the mark's life (ARGV[6]: wake_list_lapse) */
/* Room for every request a task may have in flight on one connection (two
   attempts, their clean-ups, the writer's mark taken down): a send that
   blocks inside an atomic step would let another process reuse env.pml's
   scratch loop index. */
#define QCAP 4

#include "env.pml"

#define TOKEN(t, a) (1 + (t) * ATTS + (a) - 1)
#define TOKEN_TASK(tok) (((tok) - 1) / ATTS)
#define IS_READ_TOKEN(tok) (TOKEN_TASK(tok) < NR)   /* 'r:' (else 'w:') */
#define WAITER_ID 1       /* the writer's waiter id (its mark) */

/* What a master holds: the hash {R}'s field of each task (the token it
   names; 0: none) and the writer's mark {R}:writer (0: none). */
byte fld[N * NT];
byte fdl[N * NT];        /* its deadline: time left, on task t's clock */
byte mark[N];
byte mdl[N];             /* the mark's life left, on the writer's clock */
#define F(m, t) fld[(m) * NT + (t)]
#define FDL(m, t) fdl[(m) * NT + (t)]
#define LIVE_FIELD(m, t) (F(m, t) != 0 && FDL(m, t) > 0)
/* A field rw_acquire.lua counts as a hold (COUNT_LAPSED: every field). */
#ifdef COUNT_LAPSED
#define COUNTED(m, t) (F(m, t) != 0)
#else
#define COUNTED(m, t) LIVE_FIELD(m, t)
#endif

/* What a script on master m reads first: TIME, then each field's deadline
   and the mark (GET): each may have passed, or time may pass until it has
   (a lapsed field keeps fdl 0 until a script deletes it; the mark, a key
   of its own, is gone when it expires). */
inline observe(m) {
  for (g_i : 0 .. NT - 1) {
    if
    :: F(m, g_i) != 0 -> MAY_PASS(CLIENT_OF(g_i), FDL(m, g_i), skip)
    :: else -> skip
    fi
  }
  g_i = 0;
  if
  :: mark[m] != 0 -> MAY_PASS(CLIENT_OF(WRITER), mdl[m], mark[m] = 0)
  :: else -> skip
  fi
}

/* Operations */
#define OP_RWACQ 1        /* rw_acquire.lua: a = token, b = 1 write / 0 read, d = waiter id */
#define OP_RWREL 2        /* rw_release.lua: a = token, b = waiter id to take down, d = 1 to wake */

/* rw_acquire.lua on master m. */
inline rw_acquire(m, token, write, waiter) {
  /* 21-24 TYPE: only a read-write hash is stored here; 25-26 TIME */
  observe(m);
  g_j = 0; g_k = 0;                                       /* 27 readers, writers = 0, 0 */
  for (g_i : 0 .. NT - 1) {                               /* 28 HGETALL; 29-42 */
    if
#ifndef COUNT_LAPSED
    :: F(m, g_i) != 0 && FDL(m, g_i) == 0 -> F(m, g_i) = 0  /* 35-36 deadline <= now: HDEL */
#endif
    :: COUNTED(m, g_i) && IS_READ_TOKEN(F(m, g_i)) -> g_j++  /* 38 */
    :: COUNTED(m, g_i) && !IS_READ_TOKEN(F(m, g_i)) -> g_k++ /* 40 */
    :: else -> skip
    fi
  }
  g_i = 0;
  g_n = 1;                                                /* g_n: the script goes on */
  if                                                      /* 43 GET KEYS[3] */
  :: !write ->
     if
     :: g_k > 0 || mark[m] != 0 -> g_r = R_NO; g_n = 0     /* 47-50 */
     :: else -> skip
     fi
  :: write ->
     if
     :: g_k > 0 || g_j > 0 || (mark[m] != 0 && mark[m] != waiter) ->  /* 52 */
        if
        :: waiter != 0 && (mark[m] == 0 || mark[m] == waiter) ->
           mark[m] = waiter; mdl[m] = MLIFE               /* 53-55 SET KEYS[3] waiter PX ARGV[6] */
        :: else -> skip
        fi;
        g_r = R_NO; g_n = 0                               /* 56 */
     :: else ->
        if
        :: mark[m] != 0 -> mark[m] = 0; mdl[m] = 0        /* 58-60 DEL KEYS[3] */
        :: else -> skip
        fi
     fi
  fi;
  if
  :: g_n ->
     F(m, TOKEN_TASK(token)) = token;                     /* 62 HSET KEYS[1] ARGV[1] now + ttl */
     FDL(m, TOKEN_TASK(token)) = TTL;
     /* 63-65 PEXPIRE: the key lives as long as its latest field: the
        fields' deadlines are what is modelled */
     g_r = R_YES                                          /* 66-68 */
  :: else -> skip
  fi;
  g_j = 0; g_k = 0; g_n = 0
}

/* rw_release.lua on master m, after observe(m) (OLD_RW_RELEASE:
   reentrant_release.lua's effect on the rw hash, the seeded bug). Answers 1
   as R_YES, 0 as R_NO. */
inline rw_release(m, token, waiter) {
  if
  :: waiter != 0 && mark[m] == waiter -> mark[m] = 0; mdl[m] = 0  /* 22-24 GET KEYS[2] == ARGV[2]: DEL */
  :: else -> skip
  fi;
  /* 25-26 TIME; 27-33 HGETALL, every field a read-write hold */
#ifdef OLD_RW_RELEASE
  /* Before the rw release: the token's field there, the whole key DELeted. */
  if
  :: F(m, TOKEN_TASK(token)) == token ->
     for (g_i : 0 .. NT - 1) { F(m, g_i) = 0 }; g_i = 0;
     g_r = R_YES
  :: else -> g_r = R_NO
  fi
#else
  g_r = R_NO;                                             /* 34 ours = false */
  for (g_i : 0 .. NT - 1) {                               /* 35 */
    if
    :: F(m, g_i) != 0 && (F(m, g_i) == token || FDL(m, g_i) == 0) ->  /* 37 ARGV[1], or deadline <= now */
       if
       :: F(m, g_i) == token && FDL(m, g_i) > 0 -> g_r = R_YES  /* 39 ours = deadline > now */
       :: else -> skip
       fi;
       F(m, g_i) = 0; FDL(m, g_i) = 0                     /* 38 HDEL KEYS[1] fields[i] */
    :: else -> skip
    fi
  }
  g_i = 0
  /* 46-48 DEL KEYS[1] when no live field is left: the same state here;
     49-51 PEXPIRE to the latest live deadline: the fields' deadlines are
     what is modelled; 53-56 PUBLISH: wake-ups are not modelled here */
#endif
}

/* The live holds on master m other than the one token `token` names. */
inline count_others(m, token, into) {
  into = 0;
  for (g_i : 0 .. NT - 1) {
    if
    :: LIVE_FIELD(m, g_i) && F(m, g_i) != token -> into++
    :: else -> skip
    fi
  }
  g_i = 0
}

inline run_script(m) {
  if
  :: g_op == OP_RWACQ -> rw_acquire(m, g_a, g_b, g_d)
  :: g_op == OP_RWREL ->
     /* No live hold is released by a token that does not name it (lapsed
        ones go: they are no one's). */
     observe(m);
     count_others(m, g_a, g_x);
     rw_release(m, g_a, g_b);
     count_others(m, g_a, g_y);
     assert(g_y == g_x);
     g_x = 0; g_y = 0
  fi
}
/* A restart empty: only once every field and the mark may have expired
   (time passes until they have). */
inline forget(m) {
  observe(m);
  for (g_i : 0 .. NT - 1) {
    if
    :: LIVE_FIELD(m, g_i) -> g_n = 0
    :: else -> skip
    fi
  }
  g_i = 0;
  if
  :: g_n && mark[m] == 0 ->
     for (g_i : 0 .. NT - 1) { F(m, g_i) = 0; FDL(m, g_i) = 0 }; g_i = 0
  :: else -> g_n = 0
  fi
}
/* Client cl's clock moves d steps on: its task's fields, and the mark when
   cl is the writer's. */
inline advance_model(cl, d) {
  for (g_y : 0 .. N - 1) {
    DOWN(FDL(g_y, cl), d);
    if
    :: cl == CLIENT_OF(WRITER) && mark[g_y] != 0 -> DOWN(mdl[g_y], d)
    :: else -> skip
    fi
  }
  g_y = 0
}

#include "env_procs.pml"

#ifdef LIVENESS
/* No wake-ups here (rw_release.lua's PUBLISH is not modelled): liveness.pml's
   crash clears a waiter id no one reads. */
byte wcur[NT];
#endif
#include "liveness.pml"

/* A task: acquire (ATTS attempts; a refused or failed round is cleaned up
   on every master that did not refuse: rw_release.lua with no wake), hold,
   release by its token on every master. The writer has a waiter id (its
   mark) and takes the mark down when it gives up. With LIVENESS the
   writer never gives up (its tokens reused in turn) and stops once it
   holds; a reader may crash at any step. */
proctype Task(byte t) {
  byte att, tok, tg;
  bool won;
  bool write = (t == WRITER);
attempt:
  atomic {
    ROOM(t) ->
    att = (FOREVER(t) -> (att % ATTS) + 1 : att + 1); tok = TOKEN(t, att);
    round_start(t, R_EARLY, TTL, OP_RWACQ, tok, write, (write -> WAITER_ID : 0))
  };
#ifdef LIVENESS
  if
  TASK_CRASH(t)             /* its requests sent, still to run */
  :: skip
  fi;
#endif
  await_round(t);
  atomic {
    ROOM(t) ->
    won = (yes[t] >= Q && IN_TIME(t));
    if
    :: won -> held[t] = 1; wend[t] = rdl[t]
    :: else -> cleanup_on(t, MAY_HOLD(t), OP_RWREL, tok, 0, 0)
    fi;
    rdl[t] = 0
  };
  if
#ifdef LIVENESS
  :: won && FOREVER(t) -> goto end   /* the property reached: it holds for ever */
  :: won && !FOREVER(t) ->
     if
     TASK_CRASH(t)          /* holding */
     :: skip
     fi;
#else
  :: won ->
#endif
     atomic {
       ROOM(t) ->
       held[t] = 0; wend[t] = 0;
       cleanup_on(t, ALL_MASK, OP_RWREL, tok, 0, 1)
     }
  :: !won && (FOREVER(t) || att < ATTS_OF(t)) -> atomic { WAIT_A_STEP(t) }; goto attempt
  :: !won && !FOREVER(t) && att >= ATTS_OF(t) ->
     if
     :: write -> atomic { ROOM(t) -> cleanup_on(t, ALL_MASK, OP_RWREL, 0, WAITER_ID, 0) }
     :: else -> skip
     fi
  fi;
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

/* No writer with a reader (and one writer: there is one). */
#if NR > 1
#define READER_IN (IN_CS(0) || IN_CS(1))
#else
#define READER_IN IN_CS(0)
#endif
active proctype no_writer_with_a_reader() {
end:
  atomic { IN_CS(WRITER) && READER_IN -> assert(false) }
}
#ifdef LIVENESS
/* Liveness (README.md, "Liveness"): nothing stays blocked after every
   holder crashed and the ttls passed: the writer, retrying without bound,
   gets in whatever the readers did (hold, crash anywhere). */
ltl writer_gets_in { <> held[WRITER] }
#endif
