#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package, as a user gets it: `cpack -G DEB` from this build,
# `dpkg -i` into the machine, the find_package consumer (test/consumer/
# project) built against /usr and run against a real redis-server master,
# then `dpkg -r`. The package is removed and the master stopped on every
# path out, failures included; one run at a time per machine (flock).
# Usage: deb_test.sh BUILD_DIR CONSUMER_SOURCE WORK_DIR CXX VERSION
set -euo pipefail
build=$1 source=$2 work=$3 cxx=$4 version=$5

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deb_test: needs root (or sudo) for dpkg -i" >&2; exit 1; }
  sudo=sudo
fi

exec 9>/tmp/redlock-deb-test.lock
flock -w 900 9 || { echo "deb_test: another run holds /tmp/redlock-deb-test.lock" >&2; exit 1; }

if dpkg-query -W -f='${Status}' redlock 2>/dev/null | grep -q "install ok installed"; then
  echo "deb_test: a redlock package is already installed on this machine; not replacing it (dpkg -r redlock first)" >&2
  exit 1
fi

redis_pid=""
cleanup() {
  local rc=$?
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  if dpkg-query -W -f='${Status}' redlock 2>/dev/null | grep -q "install ok installed"; then
    $sudo dpkg -r redlock >/dev/null || echo "deb_test: dpkg -r redlock FAILED: remove it by hand" >&2
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rm -rf "$work" && mkdir -p "$work"
echo "== cpack -G DEB"
# Stripped: the test build's debug info would only make the package slow to compress.
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" -D CPACK_STRIP_FILES=ON >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/pkg/redlock_"$version"_*.deb)
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'

echo "== dpkg -i $(basename "$deb")"
$sudo dpkg -i "$deb"
for f in /usr/bin/redlock /usr/include/redlock/redlock.hpp /usr/include/redlock/version.hpp \
         /usr/include/redlock/export.hpp /usr/share/man/man1/redlock.1.gz; do
  [ -e "$f" ] || { echo "deb_test: the package did not install $f" >&2; exit 1; }
done
dpkg -L redlock | grep -q '/cmake/redlock/redlockConfig.cmake$' || { echo "deb_test: no redlockConfig.cmake" >&2; exit 1; }
dpkg -L redlock | grep -q '/pkgconfig/redlock.pc$' || { echo "deb_test: no redlock.pc" >&2; exit 1; }
[ "$(/usr/bin/redlock --version)" = "redlock $version" ] || { echo "deb_test: redlock --version: $(/usr/bin/redlock --version)" >&2; exit 1; }

echo "== the find_package consumer against /usr"
cmake -S "$source" -B "$work/consumer" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH=/usr >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
found=$(sed -n 's/^redlock_DIR:PATH=//p' "$work/consumer/CMakeCache.txt")
case "$found" in
  /usr/lib/*) echo "found redlock in $found" ;;
  *) echo "deb_test: find_package found redlock in '$found', not in the package" >&2; exit 1 ;;
esac
cmake --build "$work/consumer" -j 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

echo "== run against a master"
for attempt in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 20000))
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
               --logfile "$work/redis.log" --daemonize no &
  redis_pid=$!
  for _ in $(seq 50); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    kill -0 "$redis_pid" 2>/dev/null || break
    sleep 0.1
  done
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; redis_pid=""
done
[ -n "$redis_pid" ] || { echo "deb_test: could not start redis-server" >&2; exit 1; }
"$work/consumer/consumer" "redis://127.0.0.1:$port"
echo "deb_test: ok"
