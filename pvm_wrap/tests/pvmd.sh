#!/bin/sh
# Starts or halts the PVM daemon the PVM tests share (CTest fixture pvmd).
# Needs PVM_ROOT, PVM_ALLOW_ROOT (as root) and PVM_TMP (a private directory, so a daemon the
# user runs in /tmp is never touched). `stop` always succeeds in leaving no daemon: `halt`
# first, then SIGKILL to the daemon recorded in the private directory, then the files go.
set -u
: "${PVM_TMP:?PVM_TMP must name a private directory}"
uid=$(id -u)
daemon_pid() {
  # pvmd writes its address file pvmd.<uid>; its pid is the process with that PVM_TMP.
  for p in $(pgrep -x pvmd 2>/dev/null); do
    if (tr '\0' '\n' < /proc/$p/environ) 2>/dev/null | grep -qx "PVM_TMP=$PVM_TMP"; then
      echo "$p"
    fi
  done
}
stop() {
  # Only a live daemon can halt. After a SIGKILL its pvmd.<uid> stays behind, and a console
  # started then cannot start a daemon of its own ("pvmd already running") nor reach the dead
  # one: it would retry until the timeout.
  if [ -n "$(daemon_pid)" ]; then
    # In a subshell: halt ends the console too, and the shell would report "Terminated".
    (echo halt | timeout 10 pvm) >/dev/null 2>&1
  fi
  for i in 1 2 3 4 5 6 7 8 9 10; do
    [ -z "$(daemon_pid)" ] && break
    sleep 0.2
  done
  for p in $(daemon_pid); do kill -9 "$p" 2>/dev/null; done
  rm -f "$PVM_TMP/pvmd.$uid" "$PVM_TMP/pvml.$uid" "$PVM_TMP"/pvmtmp* "$PVM_TMP/hostfile" \
    2>/dev/null
  rmdir "$PVM_TMP" 2>/dev/null
  return 0
}
case "${1:-}" in
  start)
    stop  # a daemon or stale files left by an interrupted earlier run
    mkdir -p "$PVM_TMP"
    # The group server (pvmgs, started by the first pvm_joingroup) lives in
    # $PVM_ROOT/lib on Debian, which is not on PVM's default executable path.
    printf '* ep=%s/lib:$HOME/pvm3/bin/$PVM_ARCH\n%s\n' "${PVM_ROOT:-/usr/lib/pvm3}" \
      "$(hostname)" > "$PVM_TMP/hostfile"
    echo quit | timeout 20 pvm "$PVM_TMP/hostfile" >/dev/null 2>&1
    if [ -z "$(daemon_pid)" ]; then
      echo "pvmd did not start (PVM_ROOT=${PVM_ROOT:-unset}, PVM_TMP=$PVM_TMP)" >&2
      cat "$PVM_TMP/pvml.$uid" >&2 2>/dev/null
      stop
      exit 1
    fi
    echo "pvmd running (pid $(daemon_pid)) with PVM_TMP=$PVM_TMP"
    ;;
  stop)
    stop
    if [ -n "$(daemon_pid)" ]; then echo "pvmd still running" >&2; exit 1; fi
    echo "no pvmd left"
    ;;
  pid)
    # The daemon of this PVM_TMP, if any (for tests of this script).
    daemon_pid
    ;;
  *)
    echo "usage: pvmd.sh start|stop|pid" >&2
    exit 2
    ;;
esac
