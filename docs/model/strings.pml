/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scripts on string lock keys (a mutex, a semaphore's permit slots, the
 * names of a set, an election), transcribed from lua/: each redis.call is
 * one statement on master m's state, commented with its file and line; a
 * whole script is one atomic step of the master (env_procs.pml).
 *
 * The model defines NK (lock keys per master), NL (wake lists), NW (waiter
 * ids), TTL, LAPSE (a wake-list entry's life: wake_list_lapse),
 * TOKEN_CLIENT(token) and WAITER_CLIENT(w) (whose clock a key's or an
 * entry's deadline is on: env.pml, "Time"), and heard_named(m, w, token)
 * (what the client of waiter w does with master m's message naming it);
 * FENCED keeps fence counters.
 *
 * Script hashes (SHA1 of the script as sent, cmake/lua_text.cmake), checked
 * by test/model/check_script_hashes.cmake; update them with the
 * transcription:
 * @script lua/mutex_acquire.lua fb05c767a307a2f6f1efa060ddfc440409caf6c1
 * @script lua/mutex_release.lua 6911687d025ac9139fee723c93e038e2e52c1bba
 * @script lua/extend.lua 41029f6c37c17fa89fb8430e6d102aea19e9e396
 * @script lua/release_all.lua 75ab2683f64b38609226c91c84df776f39c983ef
 * @script lua/multi_acquire.lua bc24e74fa2b21ce4f26265415bab808b0a2e5288
 * (lua/lib/wake_first_waiter.lua is part of mutex_release.lua and
 * release_all.lua, lua/lib/list_waiter.lua of mutex_acquire.lua and
 * mutex_release.lua, as embedded. Line numbers below are of each file as
 * written, not as sent.)
 */

/* What a master holds. Holder descriptions ({R}:holder) are left out: no
   decision reads them (docs/algorithm.md, section 1). A waiter's score is
   the number of its acquisition (when it began: the same on every master). */
byte key[N * NK];        /* the token lock key k holds (0: no key) */
byte kdl[N * NK];        /* its life left, on its client's clock (env.pml, "Time") */
#ifdef FENCED
byte fence[N * NK];      /* {k}:fence: never expires */
#endif
byte wsc[N * NL * NW];   /* wake list l ({R}:wake): waiter w's score (0: not listed) */
byte wdl[N * NL * NW];   /* its deadlines ({R}:wake:until): time left, on the waiter's clock */

#define K(m, k) ((m) * NK + (k))
#define W(m, l, w) (((m) * NL + (l)) * NW + (w) - 1)

/* Operations (a request's op; the key or list it names in the high nibble). */
#define OP_SETNX    1   /* SET R token NX PX ttl: a = token */
#define OP_MACQ     2   /* mutex_acquire.lua: a = token, b = waiter id, d = its score */
#define OP_MREL     3   /* mutex_release.lua: a = token, b = mode, d = an entry to take down */
#define OP_EXT      4   /* extend.lua: a = token, b = ttl */
#define OP_WLEAVE   5   /* ZREM {R}:wake w; ZREM {R}:wake:until w (leave_wake_list): a = w */
#define OP_RELALL   6   /* release_all.lua: a = token, b = the keys (bits), d = 1 to wake */
#define OP_MULTI    7   /* multi_acquire.lua: a = token, b = the keys (bits) */
#define OP_CODE(op) ((op) & 15)
#define OP_KEY(op) ((op) >> 4)
#define ON_KEY(op, k) ((op) + 16 * (k))

/* mutex_release.lua ARGV[3] */
#define REL_CLEANUP 0   /* '0' */
#define REL_WAKE    1   /* '1' */
#define REL_QUIET   2   /* 'quiet' */
#define REL_PASS    3   /* 'pass' */

/* Key k of master m, if its deadline passed (or time passes until it
   has), is gone: what Redis does to an expired key when a command reads it. */
inline observe_key(m, k) {
  if
  :: key[K(m, k)] != 0 ->
     MAY_PASS(TOKEN_CLIENT(key[K(m, k)]), kdl[K(m, k)], key[K(m, k)] = 0)
  :: else -> skip
  fi
}

/* A wake-list entry has lapsed: its deadline passed on its waiter's clock. */
#define LAPSED(m, l, w) (wdl[W(m, l, w)] == 0)

/* The score the wake lists order waiter w by (a model whose scores would
   grow without bound defines it as a rank among the waiters instead). */
#ifndef WSCORE
#define WSCORE(m, l, w) wsc[W(m, l, w)]
#endif

/* lib/wake_first_waiter.lua first_live_waiter(list, deadlines): into g_k
   the first live waiter of master m's wake list l (0: none), the lapsed
   ones swept. The script reads the list and the head's deadline through
   redis.pcall, and a key of another type there (the user's own data) means
   no one to wake (lines 18 and 24): not modelled, the model has no key
   types (every list here is a wake list). */
inline lowest_waiter(m, l) {
  g_k = 0;
  for (g_j : 1 .. NW) {
    if
    :: wsc[W(m, l, g_j)] != 0 && (g_k == 0 || WSCORE(m, l, g_j) < WSCORE(m, l, g_k)) -> g_k = g_j
    :: else -> skip
    fi
  }
  g_j = 0
}

inline first_live_waiter(m, l) {
  lowest_waiter(m, l);                                   /* 17-20 ZRANGE list 0 0 (pcall) */
  if
  :: g_k != 0 && LAPSED(m, l, g_k) ->                   /* 21-25 TIME; ZSCORE deadlines head (pcall) <= now */
     for (g_j : 1 .. NW) {                               /* 26 ZRANGEBYSCORE deadlines -inf now */
       if
       :: wsc[W(m, l, g_j)] != 0 && LAPSED(m, l, g_j) ->
          wsc[W(m, l, g_j)] = 0; wdl[W(m, l, g_j)] = 0   /* 27-28 ZREM list, deadlines lapsed */
       :: else -> skip
       fi
     }
     wsc[W(m, l, g_k)] = 0;                              /* 30 ZREM list head */
     lowest_waiter(m, l)                                 /* 31 ZRANGE list 0 0 */
  :: else -> skip
  fi
}

/* lib/wake_first_waiter.lua name_waiter: 40-41 PUBLISH <channel>:<client
   of head> '=<head> <token>'. */
#define name_waiter(m, head, token) heard_named(m, head, token)

/* mutex_acquire.lua on master m's key k with wake list l ('line': only
   join the list). The wake list is written through redis.pcall (the ZREMs
   at 30, lib/list_waiter.lua): a key of another type there (the user's
   own data) is left as it is and the waiter not listed; not modelled, the
   model has no key types. */
inline mutex_acquire(m, k, l, token, waiter, score, line) {
  observe_key(m, k);
  if
  :: !line && key[K(m, k)] == 0 ->                       /* 25-26 takes and SET KEYS[1] ARGV[1] NX PX ttl */
     key[K(m, k)] = token; kdl[K(m, k)] = TTL;
     if
     :: waiter != 0 && wsc[W(m, l, waiter)] != 0 ->      /* 27-30 ZREM KEYS[3] waiter == 1 (pcall) */
        wsc[W(m, l, waiter)] = 0; wdl[W(m, l, waiter)] = 0  /*    ZREM KEYS[4] waiter (pcall) */
     :: else -> skip
     fi;
     /* 32-34 holder description: not modelled */
#ifdef FENCED
     fence[K(m, k)]++; g_v = fence[K(m, k)];             /* 35-37 INCR KEYS[2] */
#endif
     g_r = R_YES                                         /* 38 OK */
  :: else ->
     /* 40-43 TYPE: only lock tokens are stored here */
     if
     :: waiter != 0 ->                                   /* 44-46 TIME; 47 list_waiter: */
        if
        :: wsc[W(m, l, waiter)] == 0 -> wsc[W(m, l, waiter)] = score  /* lib/list_waiter.lua 14-15 ZADD KEYS[3] NX score waiter (pcall) */
        :: else -> skip
        fi;
        wdl[W(m, l, waiter)] = LAPSE                     /* lib/list_waiter.lua 16-19 ZADD KEYS[4] now + lapse waiter (pcall) */
        /* lib/list_waiter.lua 20-22 PEXPIRE the lists to one and a half
           lapses where less than one is left (not modelled): they outlive
           their latest entry, whose lapse first_live_waiter sees */
     :: else -> skip
     fi;
     g_r = R_NO                                          /* 49 nil */
  fi
}

/* SET R token NX PX ttl (a plain acquisition: acquire_round, kinds.cpp). */
inline set_nx(m, k, token) {
  observe_key(m, k);
  if
  :: key[K(m, k)] == 0 -> key[K(m, k)] = token; kdl[K(m, k)] = TTL; g_r = R_YES
  :: else -> g_r = R_NO
  fi
}

/* mutex_release.lua on master m's key k with wake list l. Answers 0 as
   R_NO, and 1, 2 or 3 as R_YES with that value (release_round's classify,
   kinds.cpp). The wake list is read and written through redis.pcall (the
   ZREMs at 39-40, first_live_waiter, list_waiter): a key of another type
   there is not modelled, the model has no key types. */
inline mutex_release(m, k, l, token, mode, listed_as) {
  observe_key(m, k);
  if
  :: listed_as != 0 ->                                   /* 38 */
     wsc[W(m, l, listed_as)] = 0;                        /* 39 ZREM KEYS[2] ARGV[4] (pcall) */
     wdl[W(m, l, listed_as)] = 0                         /* 40 ZREM KEYS[3] ARGV[4] (pcall) */
  :: else -> skip
  fi;
  g_r = R_YES; g_v = 1; g_n = 1;                         /* g_n: the script goes on */
  if
  :: mode == REL_PASS ->                                 /* 42 */
     if
     :: key[K(m, k)] != 0 -> g_r = R_NO; g_v = 0; g_n = 0   /* 43 EXISTS KEYS[1]: return 0 */
     :: else -> skip
     fi
  :: else ->
     if
     :: key[K(m, k)] != token -> g_r = R_NO; g_v = 0; g_n = 0  /* 45-47 GET KEYS[1] ~= ARGV[1]: return 0 */
     :: else ->
        key[K(m, k)] = 0; kdl[K(m, k)] = 0;              /* 48 DEL KEYS[1] */
        /* 50-51 holder description: not modelled */
        if
        :: mode != REL_WAKE && mode != REL_QUIET -> g_n = 0  /* 52-54 return 1 */
        :: else -> skip
        fi
     fi
  fi;
  if
  :: g_n ->
     first_live_waiter(m, l);                            /* 56-57 */
     if
     :: g_k != 0 && mode == REL_QUIET -> g_v = 3         /* 58 return 3 */
     :: g_k != 0 && mode != REL_QUIET ->
        name_waiter(m, g_k, token);                      /* 60 */
        /* 61 ARGV[5..7], the releaser listed behind (list_waiter,
           lib/list_waiter.lua 13-23): not modelled */
        g_v = 2                                          /* 62 return 2 */
     :: else -> skip                                     /* 64 return 1 */
     fi
  :: else -> skip
  fi;
  g_k = 0; g_n = 0
}

/* extend.lua on a string key (its hash branch is in hash.pml). */
inline extend_string(m, k, token, ttl) {
  observe_key(m, k);
  /* 17 TYPE; 21-23 a read-write field: not a string */
  if
  :: key[K(m, k)] != token -> g_r = R_NO                 /* 24, 27-29 GET KEYS[1] == ARGV[1] */
  :: else ->
#ifdef SHORTEN_EXTEND
     /* Before 9968914 (the lease rules): PEXPIRE KEYS[1] ARGV[2] whatever
        the key had left. */
     kdl[K(m, k)] = ttl;
#else
     if
     :: kdl[K(m, k)] < ttl -> kdl[K(m, k)] = ttl         /* 30-31 PTTL KEYS[1] < ARGV[2]: PEXPIRE */
     :: else -> skip
     fi;
#endif
     /* 33-37 the holder description; 38-43 a semaphore's {R}:permits: not modelled */
     g_r = R_YES                                         /* 44 return 1 */
  fi
}

/* leave_wake_list (kinds.cpp): ZREM {R}:wake w, ZREM {R}:wake:until w. */
inline leave_wake_list(m, l, w) {
  wsc[W(m, l, w)] = 0; wdl[W(m, l, w)] = 0; g_r = R_YES
}

/* release_all.lua over master m's keys in `mask`; with `wake`, key k's
   wake list is list k (the names of a set each have their own). A wake
   list of another type (first_live_waiter's pcall) is not modelled. */
inline release_all(m, token, mask, wake) {
  g_n = 0;                                               /* 23 cleared = 0 */
  for (g_i : 0 .. NK - 1) {                              /* 24 for i = 1, n */
    if
    :: mask & (1 << g_i) -> observe_key(m, g_i)
    :: else -> skip
    fi;
    if
    :: (mask & (1 << g_i)) && key[K(m, g_i)] == token -> /* 25 GET KEYS[i] == ARGV[1] */
       key[K(m, g_i)] = 0; kdl[K(m, g_i)] = 0;           /* 26 DEL KEYS[i] */
       g_n++;                                            /* 27 */
       /* 28-29 holder description: not modelled */
#ifndef OLD_RELEASE_ALL
       if
       :: wake ->                                        /* 30 */
          first_live_waiter(m, g_i);                     /* 31 */
          if
          :: g_k != 0 -> name_waiter(m, g_k, token)      /* 32 */
          :: else -> skip
          fi
       :: else -> skip
       fi
#endif
       /* OLD_RELEASE_ALL: before 7a05ebd the script published nothing
          (git show 3b117ac:lua/release_all.lua). */
    :: else -> skip
    fi
  }
  g_i = 0; g_k = 0;
  /* 36 return cleared == n and 1 or 0 */
  g_r = ((g_n == (((mask & 1) != 0) + ((mask & 2) != 0) + ((mask & 4) != 0))) -> R_YES : R_NO);
  g_n = 0
}

/* multi_acquire.lua on master m's keys in `mask`: every one, or none
   (unfenced, no description). */
inline multi_acquire(m, token, mask) {
  g_n = 0;                                               /* 14 held = false */
  for (g_i : 0 .. NK - 1) {                              /* 15 for i = 1, n */
    if
    :: mask & (1 << g_i) ->
       observe_key(m, g_i);
       if
       :: key[K(m, g_i)] != 0 -> g_n = 1                 /* 16-22 TYPE ~= 'none': held (only tokens here) */
       :: else -> skip
       fi
    :: else -> skip
    fi
  }
  g_i = 0;
  if
  :: g_n -> g_r = R_NO                                   /* 24-26 return false */
  :: else ->
     for (g_i : 0 .. NK - 1) {                           /* 31 for i = 1, n */
       if
       :: mask & (1 << g_i) -> key[K(m, g_i)] = token; kdl[K(m, g_i)] = TTL  /* 32 SET KEYS[i] ARGV[1] PX ttl */
       :: else -> skip
       fi
     }
     g_i = 0;
     /* 33-39 descriptions, fence counters: not modelled */
     g_r = R_YES                                         /* 43 OK */
  fi;
  g_n = 0
}

/* Client cl's clock moves d steps on, for the string keys and wake-list
   entries on it. */
inline advance_strings(cl, d) {
  for (g_x : 0 .. N * NK - 1) {
    if
    :: key[g_x] != 0 && TOKEN_CLIENT(key[g_x]) == cl -> DOWN(kdl[g_x], d)
    :: else -> skip
    fi
  }
  for (g_x : 0 .. N * NL * NW - 1) {
    if
    :: wsc[g_x] != 0 && WAITER_CLIENT(g_x % NW + 1) == cl -> DOWN(wdl[g_x], d)
    :: else -> skip
    fi
  }
  g_x = 0
}

/* A restart empty (env_procs.pml): once every key master m held may have
   expired (time passes until it has); g_n = 0 when the step chose not to. */
inline forget_strings(m) {
  for (g_i : 0 .. NK - 1) {
    observe_key(m, g_i);
    if
    :: key[K(m, g_i)] != 0 -> g_n = 0
    :: else -> skip
    fi
  }
  g_i = 0;
  if
  :: g_n ->
     for (g_i : 0 .. NK - 1) {
#ifdef FENCED
       fence[K(m, g_i)] = 0;
#endif
       skip
     }
     for (g_i : 0 .. NL * NW - 1) {
       wsc[m * NL * NW + g_i] = 0; wdl[m * NL * NW + g_i] = 0
     }
     g_i = 0
  :: else -> skip
  fi
}
