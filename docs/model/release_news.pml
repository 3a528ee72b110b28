/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a waiting task hears of releases (acquire_op::watch_releases,
 * release_news): the waiter it listens for (0: none), the releases that
 * named it (two remembered, with their copies), and a wake-up due
 * (acquire_op::wake). For the models whose tasks wait on a wake list
 * (mutex.pml, set.pml, semaphore.pml); included before strings.pml, whose
 * name_waiter calls heard_named. The model defines NT and WAITER_TASK(w)
 * (the task that waits as waiter w).
 */
byte wcur[NT];
byte ntk[NT * 2], ncn[NT * 2], nnx[NT];
bool wk[NT];

/* release_news::heard on the message '=<w> <token>' from master m: the copy
   that makes the release known on a quorum wakes the waiter
   (named_by_release). */
inline heard_named(m, w, token) {
  g_j = WAITER_TASK(w);
  if
#ifdef LIVENESS
  /* Tokens are reused here (mutex.pml, LIVENESS): news heard while a
     wake-up is due is dropped, and each attempt starts counting afresh
     (news_reset), so counts stay below a quorum's and a later release of
     the same token wakes again. Copies of two releases can then add up to
     a wake-up: an early retry, harmless. */
  :: wcur[g_j] == w && !wk[g_j] ->
#else
  :: wcur[g_j] == w ->
#endif
     if
     :: ntk[g_j * 2] == token -> ncn[g_j * 2]++; g_x = ncn[g_j * 2]
     :: ntk[g_j * 2 + 1] == token -> ncn[g_j * 2 + 1]++; g_x = ncn[g_j * 2 + 1]
     :: else -> ntk[g_j * 2 + nnx[g_j]] = token; ncn[g_j * 2 + nnx[g_j]] = 1; nnx[g_j] = 1 - nnx[g_j]; g_x = 1
     fi;
     if
     :: g_x == Q -> wk[g_j] = 1
     :: else -> skip
     fi
  :: else -> skip
  fi;
  g_x = 0; g_j = 0
}

/* Task t forgets the news heard (LIVENESS: at each attempt). */
inline news_reset(t) {
  ntk[t * 2] = 0; ntk[t * 2 + 1] = 0; ncn[t * 2] = 0; ncn[t * 2 + 1] = 0; nnx[t] = 0
}
