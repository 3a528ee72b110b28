/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader election (docs/algorithm.md, sections 8 and 14): a campaign is a
 * fenced mutex acquisition (mutex_acquire.lua with the fence counter), the
 * raise round (fence_raise.lua) whose T is the epoch, the proclamation
 * (leader_proclaim.lua); resigning is the release; an observer reads every
 * master's view (status.lua) and names the leader (leader_of). Scripts:
 * here and strings.pml; environment: env.pml, env_procs.pml; what is
 * checked and how: README.md.
 *
 * NT campaigners, each on its own client, each campaigning once (ATTS
 * attempts, retried on their timer: no wake list), leading, resigning; one
 * observer (OBSERVE) on a client of its own, reading the masters once each.
 * Without time (NO_TIME) and faults (LIVE): a leader's window lasts until
 * it resigns (mutex.pml checks windows, expiry and renewal).
 *
 * Switch OLD_MAX_FENCE (seeded bug, 272f71d): no raise round; the epoch is
 * the largest counter the acquisition's yes replies carried.
 *
 * Script hashes (SHA1 as sent: cmake/lua_text.cmake), checked by
 * test/model/check_script_hashes.cmake (mutex_acquire.lua and
 * mutex_release.lua are strings.pml's):
 * @script lua/fence_raise.lua 328548637de73d21012a19e7d37cc313d7d266ef
 * @script lua/leader_proclaim.lua 0f148de0815b0ea9ffb975ae403342cd0b1cf178
 * @script lua/status.lua 748351e5f45c9cee6db87c0e3ad93bd88396f4a4
 */
#define NO_TIME
#define FENCED
#ifndef NT
#define NT 3
#endif
#ifdef OBSERVE
#define NCL (NT + 1)     /* the observer's client is NT */
#else
#define NCL NT
#endif
#define CLIENT_OF(t) (t)
#ifndef ATTS
#define ATTS 2
#endif
#define TTL 2
#define LAPSE 2
#define NK 1
#define NL 1
#define NW 1             /* no waiter lists here: campaigners retry on their timer */
#define QCAP 4           /* README.md, "A trap for the next model" */

#include "env.pml"

#define TOKEN(t, a) (1 + (t) * ATTS + (a) - 1)
#define TOKEN_CLIENT(tok) (((tok) - 1) / ATTS)
#define WAITER_CLIENT(w) 0
#define NTOK (NT * ATTS + 1)
inline heard_named(m, w, token) { skip }

#include "strings.pml"

/* The holder description {R}:holder on each master, '<token> epoch <T>'
   (0: none). */
byte desc[N], desc_epoch[N];

#define OP_RAISE 8       /* fence_raise.lua: a = token, b = T */
#define OP_PROCLAIM 9    /* leader_proclaim.lua: a = token, b = T */

/* fence_raise.lua on master m, one name. */
inline fence_raise(m, token, T) {
  observe_key(m, 0);
  if
  :: key[K(m, 0)] != token -> g_r = R_NO                 /* 14-19 TYPE, GET KEYS[i] == ARGV[1]: return 0 */
  :: else ->
     if
     :: fence[K(m, 0)] < T -> fence[K(m, 0)] = T         /* 22-25 GET KEYS[n+i] < ARGV[i+1]: SET */
     :: else -> skip
     fi;
     g_r = R_YES                                         /* 28 return 1 */
  fi
}

/* leader_proclaim.lua on master m. */
inline leader_proclaim(m, token, T) {
  observe_key(m, 0);
  if
  :: key[K(m, 0)] != token -> g_r = R_NO                 /* 10-12 GET KEYS[1] ~= ARGV[1]: return 0 */
  :: else ->
     /* 13-16 PTTL <= 0: no key lives past its life here */
     desc[m] = token; desc_epoch[m] = T;                 /* 17 SET KEYS[2] '<token> epoch <T>' PX left */
     /* 18 PUBLISH {R}:leader '<T> <token>': the observer reads at any time */
     g_r = R_YES                                         /* 19 return 1 */
  fi
}

/* The observer's reads (status.lua, lines 15-19, 36, 39, on the leader's
   name): the token and the description, shown only for the token that
   holds (status.cpp). Lines 36 and 39 read through pcall (text_or_empty,
   32-35), a companion of another type showing as absent: not modelled,
   the model has no key types. */
byte seen_tok[N], seen_epoch[N];
bool seen[N];
inline read_status(m) {
  observe_key(m, 0);
  seen[m] = 1;
  seen_tok[m] = key[K(m, 0)];                            /* 15-19 TYPE, GET KEYS[1] */
  if                                                     /* 32 GET KEYS[4] (status.cpp: its owner's only) */
  :: desc[m] != 0 && desc[m] == key[K(m, 0)] -> seen_epoch[m] = desc_epoch[m]
  :: else -> seen_epoch[m] = 0
  fi
}
#define OP_STATUS 10

inline run_script(m) {
  if
  :: g_op == OP_MACQ -> mutex_acquire(m, 0, 0, g_a, 0, 0, 0)
  :: g_op == OP_MREL ->
     mutex_release(m, 0, 0, g_a, g_b, 0);
     /* 49-50 DEL KEYS[4] when it starts with our token */
     if
     :: g_r == R_YES && g_b != REL_PASS && desc[m] == g_a -> desc[m] = 0; desc_epoch[m] = 0
     :: else -> skip
     fi
  :: g_op == OP_RAISE -> fence_raise(m, g_a, g_b)
  :: g_op == OP_PROCLAIM -> leader_proclaim(m, g_a, g_b)
  :: g_op == OP_STATUS -> read_status(m)
  fi
}
inline forget(m) { forget_strings(m) }
inline advance_model(cl, d) { advance_strings(cl, d) }

#include "env_procs.pml"

/* Epochs granted, in grant order: the last one, and who holds each. */
byte last_epoch;
byte leader_of_epoch[NTOK + 1];   /* task + 1 (0: none) */
byte epoch_of_token[NTOK + 1];

/* The largest counter the yes replies of task t's round carried. */
#define YES_MAX(t) \
  g_v = 0; \
  for (g_i : 0 .. N - 1) { \
    if \
    :: st[(t) * N + g_i] == S_YES && rv[(t) * N + g_i] > g_v -> g_v = rv[(t) * N + g_i] \
    :: else -> skip \
    fi \
  } \
  g_i = 0

proctype Campaign(byte t) {
  byte att, tok, tg, T, mh;
  bool won;
attempt:
  /* acquire_op::attempt: a new token; a fenced acquisition always runs
     mutex_acquire.lua (the counter), here without a waiter id */
  atomic {
    att++; tok = TOKEN(t, att);
    round_start(t, R_EARLY, TTL, OP_MACQ, tok, 0, 0)
  };
  await_round(t);
  /* acquire_op::on_decided; T = the largest counter of the yes replies
     at the decision (section 8, step 2) */
  atomic {
    won = (yes[t] >= Q && IN_TIME(t));
    mh = MAY_HOLD(t);
    YES_MAX(t);
    T = g_v; g_v = 0;
    rdl[t] = 0
  };
#ifndef OLD_MAX_FENCE
  if
  :: won ->
     /* acquire_op::start_raise: fence_raise.lua to every master; won when
        a quorum confirmed (on_raised; its validity: NO_TIME) */
     atomic { round_start(t, R_EARLY, TTL, OP_RAISE, tok, T, 0) };
     await_round(t);
     atomic { won = (yes[t] >= Q && IN_TIME(t)); rdl[t] = 0 }
  :: else -> skip
  fi;
#endif
  if
  :: won ->
     atomic {
       held[t] = 1; wend[t] = TTL;
       /* At most one leader per epoch; epochs increase in grant order. */
       assert(leader_of_epoch[T] == 0);
       assert(T > last_epoch);
       leader_of_epoch[T] = t + 1; epoch_of_token[tok] = T; last_epoch = T;
       /* start_campaign: the proclamation, to every master; the campaign
          completes whatever its outcome */
       cleanup_on(t, ALL_MASK, OP_PROCLAIM, tok, T, 0)
     };
     /* start_resign: the release (mutex_release.lua '1'), then 'resigned
        <T>' on {R}:leader (nothing reads it here) */
     atomic {
       held[t] = 0; wend[t] = 0;
       cleanup_on(t, ALL_MASK, OP_MREL, tok, REL_WAKE, 0)
     }
  :: !won ->
     /* acquire_op::abandon_attempt: every master that did not refuse the
        acquisition (a raise that failed: the same masters) */
     atomic { cleanup_on(t, mh, OP_MREL, tok, REL_CLEANUP, 0) };
     if
     :: att < ATTS -> goto attempt
     :: else -> skip
     fi
  fi;
end:
  skip
}

#ifdef OBSERVE
/* An observer (leader_watch::refresh, on_views, leader_of): reads every
   master's view, each read one step of its master at any time (a message,
   a timer, the fallback); the leader is the token holding the name on a
   quorum of the views, its epoch the largest proclaimed there. It names
   only a token that won, with the epoch that token was granted. */
#define OBS NT
proctype Observer() {
  byte c, e;
  atomic {
    for (g_i : 0 .. N - 1) { rq[OBS * N + g_i]!OP_STATUS, OBS, 0, 0, 0, 0 };
    g_i = 0
  };
  (seen[0] && seen[1] && seen[2]);
  atomic {
    /* leader_of: a token on a quorum, with a proclaimed epoch */
    for (g_i : 0 .. N - 1) {
      c = (seen_tok[g_i] != 0) * ((seen_tok[g_i] == seen_tok[0]) + (seen_tok[g_i] == seen_tok[1]) + (seen_tok[g_i] == seen_tok[2]));
      if
      :: c >= Q ->
         e = MAX(seen_epoch[0] * (seen_tok[0] == seen_tok[g_i]),
                 MAX(seen_epoch[1] * (seen_tok[1] == seen_tok[g_i]), seen_epoch[2] * (seen_tok[2] == seen_tok[g_i])));
         assert(e == 0 || e == epoch_of_token[seen_tok[g_i]])
      :: else -> skip
      fi
    }
    g_i = 0
  }
end:
  skip
}
#endif

init {
  atomic {
    RUN_ENV;
    for (g_i : 0 .. NT - 1) { run Campaign(g_i) };
    g_i = 0;
#ifdef OBSERVE
    run Observer()
#endif
  }
}

/* Two leaders never hold overlapping windows. */
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
