#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compare-peer.sh: redlock-bench next to the Node.js RedLock peers whose
# harnesses are in /work/shared/peers (node-redlock v5, redis-semaphore's
# RedlockMutex, redlock-universal; each with ioredis), one after the other on
# the same 5 redis-server masters in one invocation, then one table: each
# figure, each peer, and how far ahead of the best peer we are.
#
# Usage:
#   bench/compare-peer.sh [PATH/TO/redlock-bench] [-- extra redlock-bench args]
#
# Nothing is built here: pass a built redlock-bench (first argument, or
# $REDLOCK_BENCH; default ./build/bench/redlock-bench). Needs redis-server,
# node and npm (the npm registry must be reachable unless PEER_CACHE holds
# installed copies).
#
# Environment (all optional):
#   NODES=redis://127.0.0.1:P1,...   reuse these masters instead of starting 5
#                                    (loopback, no password: the peers take ports only)
#   PIDDIR=DIR                       with NODES: DIR/<port>.pid of each master, so the
#                                    hung/no-quorum scenarios can SIGSTOP them (without
#                                    it, those are skipped on every side)
#   QUICK=1                          short runs on every side (redlock-bench --quick)
#   TLS=1                            masters started here with TLS only (a private CA made
#                                    with openssl), reached over rediss:// by redlock-bench
#                                    (--tls-ca-file) and by every peer (ioredis `tls: {ca}`,
#                                    patched into the peer's copy); not with NODES. The
#                                    floors run over TLS too (their own OpenSSL links); the
#                                    skew scenario needs plain masters: its rows stay empty
#   NODE_TIMEOUT=50ms TTL=10s        redlock-bench's --node-timeout and --ttl
#   PEERS="node-redlock redis-semaphore redlock-universal"
#                                    which peers, by harness directory name
#   PEERS_ROOT=DIR                   where the harnesses are (default /work/shared/peers);
#                                    each is COPIED, never written to
#   PEER_CACHE=DIR                   keep the installed copies here (DIR/<peer>, with
#                                    node_modules) and reuse them on the next run
#   ALTERNATE=K                      then K more rounds of the contended rows only, ours and
#                                    each peer's window one after the other in every round
#                                    (alternate-*.json); the table's leads per round, and
#                                    their median: windows minutes apart (the main table)
#                                    put the machine's drift into the ratio, adjacent ones
#                                    less of it
#   OUT=DIR                          results (default: a new /tmp/redlock-compare.* dir):
#                                    redlock-bench.json, <peer>-<scenario>.json, logs, compare.json,
#                                    plots/ (redlock-bench --plot, with the peers' points)
#
# What runs, in order, on the same masters:
#   redlock-bench --nodes ... --pidfiles ... --json OUT/redlock-bench.json   (all scenarios)
#   redlock-bench --nodes ... --scenario contended,contended_fair,semaphore --one-thread
#                 --json OUT/redlock-bench-one-thread.json   (the contended rows: workers on one
#                 thread, as the peers' harnesses run theirs on one event loop)
#   for each peer: node bench.js uncontended | throughput conc=64 | contended workers=8
#                  delay=10 jitter=10 | hung stop=P1 | noquorum stop=P1,P2,P3 (ct=0, and
#                  ct=<node timeout>)  (redis-semaphore and redlock-universal have no
#                  jitter: their retry delay is a fixed 10 ms)
#   for each peer whose harness has them (redis-semaphore's RedlockSemaphore):
#                  semaphore workers=8 limit=3 delay=10 (ours: the `semaphore` scenario)
#                  | semskew limit=3 slow=50 (ours: `semaphore_skew`)
# The peers' latencies are in ms, redlock-bench's in µs; the table converts.
# Masters started here are SIGCONTed and stopped at exit (trap), also on errors
# and Ctrl-C.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bench=${REDLOCK_BENCH:-}
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) bench=$1; shift ;;
  esac
done
bench=${bench:-$here/../build/bench/redlock-bench}
[ -x "$bench" ] || { echo "compare-peer: no executable redlock-bench at '$bench' (pass its path or set REDLOCK_BENCH)" >&2; exit 2; }
bench=$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "compare-peer: '$tool' not found" >&2; exit 2; }
done

quick=${QUICK:-0}
tls=${TLS:-0}
if [ "$tls" = 1 ]; then
  [ -z "${NODES:-}" ] || { echo "compare-peer: TLS=1 starts its own masters: unset NODES" >&2; exit 2; }
  for tool in openssl redis-cli; do
    command -v "$tool" >/dev/null || { echo "compare-peer: TLS=1 needs '$tool'" >&2; exit 2; }
  done
fi
node_timeout=${NODE_TIMEOUT:-50ms}
ttl=${TTL:-10s}
peers_root=${PEERS_ROOT:-/work/shared/peers}
read -r -a peers <<< "${PEERS:-node-redlock redis-semaphore redlock-universal}"
for name in "${peers[@]}"; do
  [ -f "$peers_root/$name/bench.js" ] || { echo "compare-peer: no harness $peers_root/$name/bench.js" >&2; exit 2; }
done
work=$(mktemp -d /tmp/redlock-compare.XXXXXX)
out=${OUT:-$work/out}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# ---- masters ----------------------------------------------------------------------
started_pids=()
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for pid in "${started_pids[@]}"; do
    kill -CONT "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${started_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work/masters" "$work/peers"
  [ "$out" = "$work/out" ] || rmdir "$work" 2>/dev/null || true
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# PING over bash's /dev/tcp (no redis-cli needed). True when PONG came back.
# A subshell, so that a failed connect cannot end the script.
ping_port() (
  port=$1 line=""
  if [ "$tls" = 1 ]; then
    [ "$(redis-cli --tls --cacert "$work/tls/ca.crt" -h 127.0.0.1 -p "$port" ping)" = PONG ]
    exit
  fi
  exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
  printf 'PING\r\n' >&3
  read -r -t 1 line <&3 || true
  [ "${line%$'\r'}" = "+PONG" ]
) 2>/dev/null

port_in_use() ( exec 3<>"/dev/tcp/127.0.0.1/$1" ) 2>/dev/null

wait_ping() {  # port, seconds
  local port=$1 tries=$(( $2 * 20 ))
  for _ in $(seq "$tries"); do
    ping_port "$port" && return 0
    sleep 0.05
  done
  return 1
}

start_master() {  # appends to ports, started_pids and the pidfiles
  for _ in $(seq 20); do
    local port=$(( 20000 + RANDOM % 40000 ))
    port_in_use "$port" && continue
    local dir=$work/masters/$port
    mkdir -p "$dir"
    local listen=(--port "$port")
    [ "$tls" = 1 ] && listen=(--port 0 --tls-port "$port" --tls-cert-file "$work/tls/master.crt"
                               --tls-key-file "$work/tls/master.key" --tls-ca-cert-file "$work/tls/ca.crt"
                               --tls-auth-clients no)
    redis-server "${listen[@]}" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
      --dir "$dir" --logfile "$dir/redis.log" >/dev/null 2>&1 &
    local pid=$!
    started_pids+=("$pid")
    if wait_ping "$port" 10; then
      echo "$pid" > "$piddir/$port.pid"
      ports+=("$port")
      return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
  done
  echo "compare-peer: could not start a redis-server" >&2
  return 1
}

ports=()
if [ -n "${NODES:-}" ]; then
  piddir=${PIDDIR:-}
  IFS=, read -r -a uris <<< "$NODES"
  for u in "${uris[@]}"; do
    hostport=${u#redis://}; hostport=${hostport%%/*}
    case "$hostport" in
      127.0.0.1:*|localhost:*) ports+=("${hostport##*:}") ;;
      *) echo "compare-peer: NODES must be redis://127.0.0.1:PORT without password (the peer takes ports only): '$u'" >&2; exit 2 ;;
    esac
  done
  nodes=$NODES
else
  command -v redis-server >/dev/null || { echo "compare-peer: redis-server not found" >&2; exit 2; }
  piddir=$work/masters/pids
  mkdir -p "$piddir"
  if [ "$tls" = 1 ]; then
    # A private CA and one certificate for 127.0.0.1 (every master's).
    mkdir -p "$work/tls"
    (cd "$work/tls" &&
      openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=compare-peer-ca &&
      openssl req -newkey rsa:2048 -nodes -keyout master.key -out master.csr -subj /CN=127.0.0.1 &&
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.cnf &&
      openssl x509 -req -in master.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out master.crt -days 2 \
        -extfile san.cnf) > "$out/tls-certificates.log" 2>&1 ||
      { echo "compare-peer: making the test certificates failed (see $out/tls-certificates.log)" >&2; exit 1; }
  fi
  for _ in 1 2 3 4 5; do start_master; done
  scheme=redis; [ "$tls" = 1 ] && scheme=rediss
  nodes=$(printf "$scheme://127.0.0.1:%s," "${ports[@]}"); nodes=${nodes%,}
fi
ports_csv=$(IFS=,; echo "${ports[*]}")
can_stop=0
if [ -n "$piddir" ]; then
  can_stop=1
  for p in "${ports[@]}"; do [ -s "$piddir/$p.pid" ] || can_stop=0; done
fi
echo "compare-peer: masters $nodes (pidfiles: ${piddir:-none}); results in $out"

all_up() {
  for p in "${ports[@]}"; do wait_ping "$p" 10 || { echo "compare-peer: master on port $p does not answer" >&2; return 1; }; done
}

# ---- redlock-bench ------------------------------------------------------------------
bench_args=(--nodes "$nodes" --json "$out/redlock-bench.json" --node-timeout "$node_timeout" --ttl "$ttl"
            --plot "$out/plots")
[ "$can_stop" = 1 ] && bench_args+=(--pidfiles "$piddir")
[ "$quick" = 1 ] && bench_args+=(--quick)
[ "$tls" = 1 ] && bench_args+=(--tls-ca-file "$work/tls/ca.crt")
echo "compare-peer: $bench ${bench_args[*]} ${extra[*]}"
status=0
"$bench" "${bench_args[@]}" "${extra[@]}" > "$out/redlock-bench.txt" 2> "$out/redlock-bench.err" || status=$?
cat "$out/redlock-bench.txt"
if [ "$status" -ne 0 ]; then
  echo "compare-peer: redlock-bench exited with $status (see $out/redlock-bench.err)" >&2
fi
[ -s "$out/redlock-bench.json" ] || { echo "compare-peer: no JSON from redlock-bench" >&2; exit 1; }
all_up
# The peers' harnesses run their 8 workers on one Node.js event loop, each
# with its own connections; redlock-bench's default gives each worker a
# thread and a sync client (16 threads on this machine's 2 cores). The
# contended rows compare like with like: ours again, workers as coroutines
# on one thread (--one-thread), each its own async_client. The threaded
# figures stay in the table, without a ratio.
one_args=(--nodes "$nodes" --json "$out/redlock-bench-one-thread.json" --node-timeout "$node_timeout" --ttl "$ttl"
          --scenario contended,contended_fair,semaphore --one-thread)
[ "$quick" = 1 ] && one_args+=(--quick)
[ "$tls" = 1 ] && one_args+=(--tls-ca-file "$work/tls/ca.crt")
echo "compare-peer: $bench ${one_args[*]}"
"$bench" "${one_args[@]}" > "$out/redlock-bench-one-thread.txt" 2> "$out/redlock-bench-one-thread.err" ||
  echo "compare-peer: redlock-bench --one-thread failed (see $out/redlock-bench-one-thread.err)" >&2
all_up

# ---- the peers ----------------------------------------------------------------------
# An installed copy of each harness: PEER_CACHE's when it has one, else a
# fresh copy and npm install (kept in PEER_CACHE when given).
prepare_peer() {  # name -> prints the directory
  local name=$1 dir
  if [ -n "${PEER_CACHE:-}" ]; then dir=$PEER_CACHE/$name; else dir=$work/peers/$name; fi
  if [ ! -d "$dir/node_modules" ]; then
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    cp -R "$peers_root/$name" "$dir"
    chmod -R u+w "$dir"
    rm -rf "$dir/node_modules"
    echo "compare-peer: npm install in $dir" >&2
    (cd "$dir" && npm install --no-audit --no-fund) > "$out/npm-install-$name.log" 2>&1 ||
      { echo "compare-peer: npm install of $name failed (see $out/npm-install-$name.log)" >&2; return 1; }
  fi
  # The harnesses connect without TLS; the copy reads PEER_TLS_CA (set
  # with TLS=1) and then gives ioredis that CA. Without it, nothing changes.
  if ! grep -q PEER_TLS_CA "$dir/bench.js"; then
    sed -i "s|const o = { host: '127.0.0.1', lazyConnect: true };|const o = { host: '127.0.0.1', lazyConnect: true, ...(process.env.PEER_TLS_CA ? { tls: { ca: require('fs').readFileSync(process.env.PEER_TLS_CA) } } : {}) };|" "$dir/bench.js"
    grep -q PEER_TLS_CA "$dir/bench.js" ||
      { echo "compare-peer: could not give $name's harness a TLS option (its connection line changed?)" >&2; return 1; }
  fi
  echo "$dir"
}

# The node timeout in whole ms, for the peer's ioredis commandTimeout (ct=).
nt_ms=$(awk -v t="$node_timeout" 'BEGIN { if (t ~ /ms$/) { sub(/ms$/, "", t); print int(t) }
  else if (t ~ /s$/) { sub(/s$/, "", t); print int(t * 1000) } else print int(t) }')
if [ "$quick" = 1 ]; then
  unc=(n=1000 warm=200); thr=(conc=64 secs=3 warm=1); con=(workers=8 secs=4 delay=10 jitter=10 ttl=10000)
  sem=(workers=8 secs=4 limit=3 delay=10 jitter=10 ttl=10000)
  hung=(n=500 warm=100)
else
  unc=(n=5000 warm=500); thr=(conc=64 secs=10 warm=1); con=(workers=8 secs=10 delay=10 jitter=10 ttl=10000)
  sem=(workers=8 secs=10 limit=3 delay=10 jitter=10 ttl=10000)
  hung=(n=2000 warm=300)
fi
p=("${ports[@]}")
runs=("uncontended ${unc[*]}" "throughput ${thr[*]}" "contended ${con[*]}")
if [ "$can_stop" = 1 ] && [ "${#p[@]}" -ge 3 ]; then
  runs+=("hung stop=${p[0]} ${hung[*]}"
         "noquorum stop=${p[0]},${p[1]},${p[2]} tries=2 cap=3000 ct=0"
         "noquorum stop=${p[0]},${p[1]},${p[2]} tries=3 cap=3000 ct=$nt_ms")
else
  echo "compare-peer: no pidfiles for every master: peer hung/noquorum skipped"
fi
# The semaphore runs, for harnesses that list them among their scenarios.
has_scenario() {  # harness dir, scenario
  grep -Eq "^const scenarios = \{.*[{ ,]$2[,} ]" "$1/bench.js"
}
# One harness run: the harness dir, its output's path without the extension,
# then the harness's arguments. Over TLS the harness reads the test CA.
run_peer() {
  local dir=$1 to=$2; shift 2
  local ca=""; [ "$tls" = 1 ] && ca=$work/tls/ca.crt
  (cd "$dir" && PORTS=$ports_csv PIDDIR=$piddir PEER_TLS_CA=$ca timeout 300 node bench.js "$@") > "$to.json" 2> "$to.err"
}
for peer_name in "${peers[@]}"; do
  peer=$(prepare_peer "$peer_name") || exit 1
  peer_runs=("${runs[@]}")
  has_scenario "$peer" semaphore && peer_runs+=("semaphore ${sem[*]}")
  if has_scenario "$peer" semskew; then
    if [ "$tls" = 1 ]; then
      echo "compare-peer: $peer_name semskew skipped over TLS (as ours: semaphore_skew needs plain masters)"
    elif [ "${#p[@]}" -eq 5 ]; then
      peer_runs+=("semskew limit=3 slow=50")
    else
      echo "compare-peer: $peer_name semskew needs 5 masters: skipped"
    fi
  fi
  i=0
  for r in "${peer_runs[@]}"; do
    read -r -a args <<< "$r"
    name=${args[0]}
    [ "$name" = noquorum ] && { i=$((i + 1)); name=noquorum$i; }
    echo "compare-peer: $peer_name: PORTS=$ports_csv PIDDIR=$piddir node bench.js ${args[*]}"
    run_peer "$peer" "$out/$peer_name-$name" "${args[@]}" ||
      echo "compare-peer: $peer_name $name failed (see $out/$peer_name-$name.err)" >&2
    all_up
  done
done

# ---- the contended rows again, alternated (ALTERNATE=K) ----------------------------------
alternate=${ALTERNATE:-0}
for k in $(seq "$alternate"); do
  alt_args=(--nodes "$nodes" --json "$out/alternate-ours-$k.json" --node-timeout "$node_timeout" --ttl "$ttl"
            --scenario contended,semaphore --one-thread)
  [ "$quick" = 1 ] && alt_args+=(--quick)
  [ "$tls" = 1 ] && alt_args+=(--tls-ca-file "$work/tls/ca.crt")
  "$bench" "${alt_args[@]}" > "$out/alternate-ours-$k.txt" 2>&1 ||
    echo "compare-peer: alternated round $k: redlock-bench failed (see $out/alternate-ours-$k.txt)" >&2
  for peer_name in "${peers[@]}"; do
    peer=$(prepare_peer "$peer_name") || exit 1
    alt_runs=("contended ${con[*]}")
    has_scenario "$peer" semaphore && alt_runs+=("semaphore ${sem[*]}")
    for r in "${alt_runs[@]}"; do
      read -r -a args <<< "$r"
      run_peer "$peer" "$out/alternate-$peer_name-${args[0]}-$k" "${args[@]}" ||
        echo "compare-peer: alternated round $k: $peer_name ${args[0]} failed" >&2
    done
  done
  all_up
done

# ---- side by side -------------------------------------------------------------------
PEER_NAMES="${peers[*]}" OUT_DIR=$out NODE_TIMEOUT_MS=$nt_ms OVER_TLS=$tls ALTERNATE=$alternate node - <<'EOF'
const fs = require('fs');
const dir = process.env.OUT_DIR;
const names = process.env.PEER_NAMES.split(' ').filter(Boolean);
// A peer prints one JSON object per run (last line); redlock-bench writes a whole file.
const load = (f, whole) => {
  try {
    const t = fs.readFileSync(`${dir}/${f}`, 'utf8').trim();
    return t ? JSON.parse(whole ? t : t.split('\n').pop()) : null;
  } catch (e) { return null; }
};
const ours = load('redlock-bench.json', true) || {};
// The contended scenarios as the peers run them (one event loop); see above.
const one = load('redlock-bench-one-thread.json', true) || {};
// Safety figures count both of our runs; undefined when neither measured it.
const numbers = (xs) => xs.filter((x) => typeof x === 'number');
const total = (...xs) => (numbers(xs).length ? numbers(xs).reduce((a, b) => a + b, 0) : undefined);
const most = (...xs) => (numbers(xs).length ? Math.max(...numbers(xs)) : undefined);
const peers = Object.fromEntries(names.map((n) => [n, {
  u: load(`${n}-uncontended.json`), t: load(`${n}-throughput.json`), c: load(`${n}-contended.json`),
  h: load(`${n}-hung.json`), q0: load(`${n}-noquorum1.json`), q1: load(`${n}-noquorum2.json`),
  s: load(`${n}-semaphore.json`), k: load(`${n}-semskew.json`) }]));
const get = (o, path) => path.split('.').reduce((x, k) => (x == null ? undefined : x[k]), o);
const ms2us = (x) => (x == null ? undefined : x * 1000);
const zeros = (a) => (Array.isArray(a) ? a.filter((x) => x === 0).length : undefined);
const median = (a) => { if (!a.length) return undefined; const s = [...a].sort((x, y) => x - y); return s[Math.ceil(s.length / 2) - 1]; };
const failed = (q) => (q && q.tries ? q.tries.filter((t) => t.outcome === 'failed').map((t) => t.ms) : []);
const hungRatio = (p) => (get(p.h, 'while_stopped.acquire.p50') && get(p.h, 'baseline_all_up.acquire.p50'))
  ? get(p.h, 'while_stopped.acquire.p50') / get(p.h, 'baseline_all_up.acquire.p50') : undefined;
// [label, ours, per-peer value, unit, which way is better ('' = no ratio)]
const defs = [
  ['uncontended pairs/s', get(ours, 'uncontended.pairs_per_s'), (p) => get(p.u, 'pairs_per_s'), '/s', 'higher'],
  ['64 in flight pairs/s', get(ours, 'throughput.pairs_per_s'), (p) => get(p.t, 'pairs_per_s'), '/s', 'higher'],
  ['contended sections/s', get(one, 'contended.sections_per_s'), (p) => get(p.c, 'cs_per_s'), '/s', 'higher'],
  ['contended attempts per section', get(one, 'contended.attempts_per_section'), (p) => get(p.c, 'attempts_per_success'), '', 'lower'],
  ['contended fairness min/max', get(one, 'contended.fairness'), (p) => get(p.c, 'min_over_max'), '', 'higher'],
  ['contended zero seconds', get(one, 'contended.zero_seconds'), (p) => zeros(get(p.c, 'per_second')), 's', ''],
  ['contended violations', total(get(one, 'contended.violations'), get(ours, 'contended.violations')),
   (p) => get(p.c, 'violations'), '', ''],
  ['contended sections/s, ours threaded', get(ours, 'contended.sections_per_s'), () => undefined, '/s', ''],
  ['contended attempts per section, ours threaded', get(ours, 'contended.attempts_per_section'), () => undefined, '', ''],
  // The fair lock (no peer has one): its hand-off against one quorum round,
  // uncontended and under the same load (the releaser's own release).
  ['fair sections/s', get(one, 'contended_fair.sections_per_s'), () => undefined, '/s', ''],
  ['fair hand-off p50', get(one, 'contended_fair.handoff_us.p50'), () => undefined, 'µs', ''],
  ['fair hand-off p50 / uncontended acquire p50', get(one, 'contended_fair.handoff_us.p50') / get(ours, 'uncontended.acquire_us.p50'),
   () => undefined, 'x', ''],
  ['fair hand-off p50 / its release p50', get(one, 'contended_fair.handoff_us.p50') / get(one, 'contended_fair.release_us.p50'),
   () => undefined, 'x', ''],
  ['fair FIFO violations', get(one, 'contended_fair.fifo_violations'), () => undefined, '', ''],
  ['uncontended pair p50', get(ours, 'uncontended.pair_us.p50'), (p) => ms2us(get(p.u, 'pair.p50')), 'µs', 'lower'],
  ['uncontended pair p99', get(ours, 'uncontended.pair_us.p99'), (p) => ms2us(get(p.u, 'pair.p99')), 'µs', 'lower'],
  ['uncontended acquire p50', get(ours, 'uncontended.acquire_us.p50'), (p) => ms2us(get(p.u, 'acquire.p50')), 'µs', 'lower'],
  // How close each client's pair is to the hand-written quorum pair (the same
  // two rounds on raw links, TCP or TLS as the run, from redlock-bench's floor
  // scenario): the bound.
  ['uncontended pair p50 / quorum floor', get(ours, 'uncontended.pair_us.p50') / get(ours, 'floor.quorum_pair_us.p50'),
   (p) => ms2us(get(p.u, 'pair.p50')) / get(ours, 'floor.quorum_pair_us.p50'), 'x', 'lower'],
  ['64 in flight pair p50', get(ours, 'throughput.pair_us.p50'), (p) => ms2us(get(p.t, 'pair.p50')), 'µs', 'lower'],
  ['one hung: acquire p50', get(ours, 'one_hung.acquire_us.p50'), (p) => ms2us(get(p.h, 'while_stopped.acquire.p50')), 'µs', 'lower'],
  ['one hung: failures', get(ours, 'one_hung.failures'), (p) => get(p.h, 'while_stopped.acquire_fails'), '', ''],
  ['one hung: p50 / own healthy p50', get(ours, 'ratios.hung_over_own_baseline'), hungRatio, 'x', ''],
  [`no quorum: fail p50 (peers ct=${process.env.NODE_TIMEOUT_MS})`, get(ours, 'no_quorum.fail_ms.p50'), (p) => median(failed(p.q1)), 'ms', 'lower'],
  // Semaphore, 3 permits, 8 workers, one name (the peer: RedlockSemaphore).
  ['semaphore sections/s', get(one, 'semaphore.sections_per_s'), (p) => get(p.s, 'cs_per_s'), '/s', 'higher'],
  ['semaphore attempts per section', get(one, 'semaphore.attempts_per_section'), (p) => get(p.s, 'attempts_per_success'), '', 'lower'],
  ['semaphore fairness min/max', get(one, 'semaphore.fairness'), (p) => get(p.s, 'min_over_max'), '', 'higher'],
  ['semaphore acquire p50', get(one, 'semaphore.acquire_wait_us.p50'), (p) => ms2us(get(p.s, 'acquire_wait.p50')), 'µs', 'lower'],
  ['semaphore acquire p99', get(one, 'semaphore.acquire_wait_us.p99'), (p) => ms2us(get(p.s, 'acquire_wait.p99')), 'µs', 'lower'],
  ['semaphore max holders (3 permits)', most(get(one, 'semaphore.max_holders'), get(ours, 'semaphore.max_holders')),
   (p) => get(p.s, 'max_holders'), '', ''],
  ['semaphore sections over 3 holders', total(get(one, 'semaphore.violations'), get(ours, 'semaphore.violations')),
   (p) => get(p.s, 'over_limit'), '', ''],
  ['semaphore zero seconds', get(one, 'semaphore.zero_seconds'), (p) => get(p.s, 'zero_seconds'), 's', ''],
  ['semaphore sections/s, ours threaded', get(ours, 'semaphore.sections_per_s'), () => undefined, '/s', ''],
  // Skew: 5 holders at once, one attempt each, 2 of 5 links of each 50 ms slower.
  ['skew: most holders at once (3 permits)', get(ours, 'semaphore_skew.max_holders'), (p) => get(p.k, 'concurrent_holders'), '', ''],
];
const rows = defs.map(([label, a, of, unit, better]) => {
  const theirs = Object.fromEntries(names.map((n) => [n, of(peers[n])]));
  const nums = Object.values(theirs).filter((x) => typeof x === 'number' && !Number.isNaN(x));
  const best = !better || !nums.length ? undefined : better === 'higher' ? Math.max(...nums) : Math.min(...nums);
  // ours/best where higher is better, best/ours where lower is: above 1 means ahead either way.
  const ahead = typeof a !== 'number' || Number.isNaN(a) || best === undefined || Number.isNaN(best) || a === 0 || best === 0 ? undefined
    : better === 'higher' ? a / best : best / a;
  return { label, ours: a, peers: theirs, unit, better, best, ahead };
});
const fmt = (x) => (x === undefined || x === null || Number.isNaN(x) ? '-' : typeof x !== 'number' ? String(x)
  : Number.isInteger(x) ? String(x) : Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(2));
const w = [36, 9, ...names.map((n) => Math.max(9, n.length)), 4, 6];
const line = (c) => c.map((x, i) => (i === 0 ? String(x).padEnd(w[i]) : String(x).padStart(w[i]))).join('  ');
console.log(`\nredlock-bench vs the peers, same masters${process.env.OVER_TLS === '1' ? ', every connection over TLS' : ''}, one run (peer latencies converted from ms to µs)`);
console.log('"ahead": ours / best peer where higher is better, best peer / ours where lower is; > 1 is ahead\n');
console.log(line(['metric', 'redlock', ...names, 'unit', 'ahead']));
for (const r of rows) console.log(line([r.label, fmt(r.ours), ...names.map((n) => fmt(r.peers[n])), r.unit,
  r.ahead === undefined ? '-' : r.ahead.toFixed(2)]));
console.log('');
const outcomes = (q) => (q && q.tries ? q.tries.map((t) => `${t.outcome} ${t.ms} ms`).join('; ') : 'not run');
for (const n of names)
  console.log(`${n} noquorum: ct=0 ${outcomes(peers[n].q0)} | ct=${process.env.NODE_TIMEOUT_MS} ${outcomes(peers[n].q1)}`);
// Without the percentile list a --plot run adds to every latency.
const latency = (l) => (l ? { p50: l.p50, p99: l.p99, max: l.max } : l);
console.log(`ours no_quorum: fail_ms ${JSON.stringify(latency(get(ours, 'no_quorum.fail_ms')))}, errors ${JSON.stringify(get(ours, 'no_quorum.errors'))}`);
console.log(`ours ratios (to the floors): ${JSON.stringify(ours.ratios || {})}`);
for (const n of names) {
  const k = peers[n].k;
  if (k) console.log(`${n} semskew: ${k.concurrent_holders} holders at once of limit ${k.limit} ` +
    `(acquired ${JSON.stringify(k.acquired)}, per-node members ${JSON.stringify(k.per_node_zcard)}, bound ${k.bound_floor_N_limit_over_Q})`);
}
const sk = ours.semaphore_skew;
if (sk) console.log(`ours semaphore_skew: holders per trial ${JSON.stringify(sk.holders_per_trial)} over ${sk.trials} trials, ` +
  `most ${sk.max_holders}, most held per master ${JSON.stringify(sk.max_held_per_master)}, node timeout ${sk.node_timeout_ms} ms`);
const row = (label) => rows.find((r) => r.label === label);
const targets = [
  ['contended attempts per section <= 2', row('contended attempts per section').ours, (x) => x <= 2],
  ['contended sections/s >= 2000', row('contended sections/s').ours, (x) => x >= 2000],
  ['contended sections/s >= best peer', row('contended sections/s').ahead, (x) => x >= 1],
  ['contended zero seconds == 0', row('contended zero seconds').ours, (x) => x === 0],
  ['contended violations == 0', row('contended violations').ours, (x) => x === 0],
  ['semaphore sections/s >= best peer', row('semaphore sections/s').ahead, (x) => x >= 1],
  ['semaphore max holders <= 3', row('semaphore max holders (3 permits)').ours, (x) => x <= 3],
  ['semaphore violations == 0', row('semaphore sections over 3 holders').ours, (x) => x === 0],
  ['skew: most holders at once <= 3', row('skew: most holders at once (3 permits)').ours, (x) => x <= 3],
];
for (const [what, x, ok] of targets)
  console.log(`target ${what}: ${x === undefined ? 'not measured' : `${fmt(x)} ${ok(x) ? 'ok' : 'MISSED'}`}`);
// The alternated rounds: in each, ours and every peer's window one after
// the other; the lead per round as the table computes it, and the median.
const rounds = [];
for (let k = 1; k <= Number(process.env.ALTERNATE || 0); k++) {
  const o = load(`alternate-ours-${k}.json`, true) || {};
  const theirs = (scenario, path) => numbers(names.map((n) => get(load(`alternate-${n}-${scenario}-${k}.json`), path)));
  const lead = (a, xs, better) => (typeof a !== 'number' || !xs.length || !a ? undefined
    : better === 'higher' ? a / Math.max(...xs) : Math.min(...xs) / a);
  rounds.push({
    round: k,
    contended: lead(get(o, 'contended.sections_per_s'), theirs('contended', 'cs_per_s'), 'higher'),
    semaphore: lead(get(o, 'semaphore.sections_per_s'), theirs('semaphore', 'cs_per_s'), 'higher'),
    semaphore_p99: lead(get(o, 'semaphore.acquire_wait_us.p99'), theirs('semaphore', 'acquire_wait.p99').map(ms2us), 'lower'),
  });
}
const alternated = {};
if (rounds.length) {
  console.log(`\nalternated rounds (ALTERNATE=${rounds.length}), "ahead" as above, per round:`);
  for (const key of ['contended', 'semaphore', 'semaphore_p99']) {
    const xs = numbers(rounds.map((r) => r[key]));
    alternated[key] = { rounds: rounds.map((r) => r[key] ?? null), median: median(xs), min: xs.length ? Math.min(...xs) : undefined,
      max: xs.length ? Math.max(...xs) : undefined };
    console.log(`  ${key.padEnd(14)} ${rounds.map((r) => fmt(r[key])).join('  ')}   median ${fmt(alternated[key].median)}`);
  }
}
fs.writeFileSync(`${dir}/compare.json`, JSON.stringify({ peers: names, tls: process.env.OVER_TLS === '1', rows,
  alternated: rounds.length ? alternated : undefined }, null, 2) + '\n');
console.log(`\n(details: ${dir})`);
EOF
# The pictures again, now with each peer's uncontended p50/p99/max.
"$bench" --plot-from "$out/redlock-bench.json" --peers "$out" --plot "$out/plots" || true
exit "$status"
