#!/bin/sh
# Test pvm.daemon.stale: the daemon fixture (tests/pvmd.sh) against what a dead daemon leaves.
#
# A daemon killed with SIGKILL leaves pvmd.<uid> (its address file), pvml.<uid> and its socket
# in PVM_TMP. While pvmd.<uid> is there no new daemon starts ("pvmd already running"), so every
# PVM test would fail after one interrupted run. This test
#   1. starts a daemon with `pvmd.sh start`, kills it with SIGKILL, checks that the files stay
#      and really block a new daemon, then runs `pvmd.sh start` again: a new daemon must
#      answer, and the old address file and socket must be gone;
#   2. plants a pvmd.<uid> and pvml.<uid> that no daemon ever wrote, then runs the start step;
#   3. runs `pvmd.sh stop` and checks that none of the daemons it started is alive and that
#      PVM_TMP is gone.
# Usage: check_pvmd_stale.sh PVMD_SH, with PVM_ROOT, PVM_ALLOW_ROOT (as root) and a PVM_TMP of
# its own (not the shared fixture's, whose daemon may be running meanwhile).
set -u
PVMD=${1:?usage: check_pvmd_stale.sh path/to/pvmd.sh}
: "${PVM_TMP:?PVM_TMP must name a private directory}"
uid=$(id -u)
started=""

fail() {
  echo "FAIL: $*"
  sh "$PVMD" stop >/dev/null 2>&1
  exit 1
}
# The fixture's own answer: a pvmd whose environment names our PVM_TMP.
daemon_pid() {
  sh "$PVMD" pid
}
# Alive: running, not a zombie waiting for its parent to collect it.
alive() {
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/$1/status 2>/dev/null)
  [ -n "$state" ] && [ "$state" != Z ]
}
start() {
  sh "$PVMD" start || fail "the start step failed ($1)"
  pid=$(daemon_pid)
  [ -n "$pid" ] || fail "the start step succeeded but no daemon runs ($1)"
  started="$started $pid"
  # The daemon serves: a console reaches it and sees this host.
  echo conf | timeout 10 pvm 2>&1 | grep -q '^1 host' || fail "the new daemon does not answer ($1)"
  echo "ok   $1: daemon $pid started and answers"
}

sh "$PVMD" stop >/dev/null 2>&1  # from an interrupted earlier run of this test

# 1. A daemon killed with SIGKILL.
start "first start"
old=$pid
kill -9 "$old"
for i in 1 2 3 4 5 6 7 8 9 10; do alive "$old" || break; sleep 0.2; done
alive "$old" && fail "daemon $old survived SIGKILL"
[ -e "$PVM_TMP/pvmd.$uid" ] || fail "SIGKILL left no pvmd.$uid behind: nothing stale to test"
stale=$(cat "$PVM_TMP/pvmd.$uid")
echo "ok   daemon $old killed; pvmd.$uid left behind: $stale"
# Without the clean-up the stale file blocks a new daemon (so the checks below can fail). The
# console then retries the dead daemon's socket for good, hence the short timeout: a daemon
# that can start is up well within it (the start step takes under a second).
(echo quit | timeout 5 pvm "$PVM_TMP/hostfile") >/dev/null 2>&1
[ -z "$(daemon_pid)" ] || fail "a daemon started over the stale pvmd.$uid: the test proves nothing"
echo "ok   the stale pvmd.$uid keeps a plain console from starting a daemon"
start "start after SIGKILL"
[ "$pid" != "$old" ] || fail "the daemon's pid did not change"
now=$(cat "$PVM_TMP/pvmd.$uid" 2>/dev/null)
[ -n "$now" ] && [ "$now" != "$stale" ] || fail "pvmd.$uid still holds the dead daemon's '$stale'"
[ ! -e "$stale" ] || fail "the dead daemon's socket $stale is still there"
echo "ok   stale pvmd.$uid and socket removed; pvmd.$uid now holds $now"

# 2. Files no daemon wrote (a daemon of another build, a crash before it wrote its own).
sh "$PVMD" stop >/dev/null || fail "stop before planting"
mkdir -p "$PVM_TMP"
planted="$PVM_TMP/pvmtmp999999.0"
echo "$planted" > "$PVM_TMP/pvmd.$uid"
echo "planted by check_pvmd_stale.sh" > "$PVM_TMP/pvml.$uid"
start "start over planted files"
now=$(cat "$PVM_TMP/pvmd.$uid" 2>/dev/null)
[ -n "$now" ] && [ "$now" != "$planted" ] || fail "pvmd.$uid still holds the planted '$planted'"
grep -q "planted by" "$PVM_TMP/pvml.$uid" 2>/dev/null && fail "the planted pvml.$uid was kept"
echo "ok   planted pvmd.$uid and pvml.$uid replaced by the new daemon's"

# 3. The stop step leaves no daemon of this test and no files.
sh "$PVMD" stop || fail "the stop step failed"
for p in $started; do
  for i in 1 2 3 4 5 6 7 8 9 10; do alive "$p" || break; sleep 0.2; done
  alive "$p" && fail "daemon $p still runs after the stop step"
done
[ -z "$(daemon_pid)" ] || fail "a daemon with PVM_TMP=$PVM_TMP still runs: $(daemon_pid)"
[ ! -e "$PVM_TMP" ] || fail "$PVM_TMP is still there: $(ls -A "$PVM_TMP")"
echo "ok   after the stop step none of the daemons$started runs and $PVM_TMP is gone"
echo PASS
