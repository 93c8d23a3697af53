#!/usr/bin/env bash
# make run: a local Corkboard on this machine. Starts the board (SQLite in
# ./.data, plain HTTP on 127.0.0.1:8889) and two reps, cell-z1 in zone z1
# and cell-z2 in zone z2, which run instances as child processes (apps from
# bin/). Configs and logs go to .data/ and .data/logs/. Ctrl-C stops the
# reps first (each stops its instances and exits), then the board, then
# the droplet server.
#
# Before the board it builds hello's droplets (hello-v1.tgz .. v3, each
# with its version built in) into .data/droplets, renders the specs of
# fixtures/lrps into .data/droplets/lrps with their URLs and checksums,
# and serves .data/droplets on 127.0.0.1:8890 (bin/droplets serve, log in
# .data/logs/droplets.log, one line per download), so that
# .data/droplets/lrps/hello.json runs hello the way an app ships: a
# download the rep checks and unpacks. fixtures/lrps/hello-local.json still
# runs bin/hello directly.
#
# The board runs from a config file rather than -dev: it is -dev's setup
# (loopback only, SQLite in .data, info logs) with the short timings of a
# dev machine, so that the instances of a killed rep are replaced within
# about ten seconds (6 s presence TTL, a convergence pass every 2 s) rather
# than a minute, and a drain is noticed within about two.
#
# CORKBOARD_TLS=1 (make run-tls, hack/run-tls.sh) runs the same cluster
# with mutual TLS end to end: bin/corkboard-certs writes .data/certs (a CA,
# board, cell-z1, cell-z2, client and operator certificates; kept across
# runs), the board serves HTTPS and requires client certificates, the reps
# serve HTTPS and present their cell's certificate to the board, and cork
# uses operator.crt (the script prints the environment for it). Its board
# also encrypts what it stores (encryption_keys, with a key made once into
# .data/tls/encryption.key), so its state lives in .data/tls, apart from
# make run's, whose board has no key. The
# instances' local endpoint stays plain HTTP on loopback (instances have
# no certificates). The droplet server stays plain HTTP: it stands for a
# blob store, not a Corkboard component, and the specs pin each droplet's
# SHA-256.
#
# Expects bin/bbs, bin/rep, bin/cork, bin/hello and bin/droplets (and
# bin/corkboard-certs with CORKBOARD_TLS=1; the Makefile builds them).
# BBS_PORT, REP_PORT_BASE and ASSET_PORT move the ports if they are taken,
# INSTANCE_PORT_BASE the instances' (61000: cell-z1 61000-61099, cell-z2
# 61100-61199); CORKBOARD_RUN_DATA moves .data (hack/run_test.go runs a
# cluster of its own beside a developer's).
# A rep that exits (its cell drained) is announced with how to start it
# again: SIGHUP to this script (see watch_rep and start_reps below), which
# also restarts a rep still evacuating once it has exited.
set -euo pipefail
cd "$(dirname "$0")/.."

root="$PWD"
data="${CORKBOARD_RUN_DATA:-$root/.data}"
bbs_port="${BBS_PORT:-8889}"
rep_port_base="${REP_PORT_BASE:-1800}"
instance_port_base="${INSTANCE_PORT_BASE:-61000}"
tls="${CORKBOARD_TLS:-}"
certs="$data/certs"
# state holds the board's database, the cells' directories, the configs
# and the logs. The TLS cluster keeps its own under .data/tls: its board
# encrypts what it stores, which a board without the key cannot read.
state="$data"
scheme=http
if [ -n "$tls" ]; then
  state="$data/tls"
  scheme=https
fi
rel="${state#"$root"/}"
logs="$state/logs"
board_url="$scheme://127.0.0.1:$bbs_port"
asset_port="${ASSET_PORT:-8890}"
asset_url="http://127.0.0.1:$asset_port"
droplets="$data/droplets"
# The state is the user's alone: directories 0700, configs 0600 (they
# name the cells' keys; the board's holds the encryption key). The umask
# is set for what this script writes, not for what it starts.
(umask 077 && mkdir -p "$logs")
chmod 0700 "$data" "$state" "$logs"

board_pid=""
rep_pids=()
droplets_pid=""
# watcher_pids are the watch_rep loops, one per running rep (see there).
watcher_pids=()

# stop_all CODE: stops the reps, then the board, then the droplet server
# (last: a rep may be downloading until it stops), and exits with CODE.
stop_all() {
  local code="$1"
  trap - INT TERM EXIT HUP
  echo
  # The watchers first, so that reps stopping here are not announced as
  # exits.
  if [ "${#watcher_pids[@]}" -gt 0 ]; then
    kill "${watcher_pids[@]}" 2>/dev/null || true
    wait "${watcher_pids[@]}" 2>/dev/null || true
  fi
  if [ "${#rep_pids[@]}" -gt 0 ]; then
    echo "run: stopping the reps (their instances stop with them)"
    kill -INT "${rep_pids[@]}" 2>/dev/null || true
    wait "${rep_pids[@]}" 2>/dev/null || true
  fi
  if [ -n "$board_pid" ]; then
    echo "run: stopping the board"
    kill -INT "$board_pid" 2>/dev/null || true
    wait "$board_pid" 2>/dev/null || true
  fi
  if [ -n "$droplets_pid" ]; then
    echo "run: stopping the droplet server"
    kill -INT "$droplets_pid" 2>/dev/null || true
    wait "$droplets_pid" 2>/dev/null || true
  fi
  rm -f "$state/run.pid"
  echo "run: stopped; state is kept in $state/board.db"
  exit "$code"
}
trap 'stop_all 0' INT TERM
trap 'stop_all $?' EXIT

# start NAME CMD...: runs CMD in the background, in a process group of its
# own (set -m), so that Ctrl-C reaches this script alone and it can stop
# things in order.
start() {
  local name="$1"
  shift
  set -m
  "$@" >"$logs/$name.log" 2>&1 &
  set +m
}

# wait_for_log NAME PATTERN WHAT PID: waits until the log has a line
# matching PATTERN; gives up (showing the log) after 60s or if the process
# PID died. wait_for_log_after (below) is the same from a line on.
wait_for_log() {
  wait_for_log_after "$1" "$2" "$3" "$4" 1
}

# wait_for_log_after NAME PATTERN WHAT PID FROM: wait_for_log, reading
# the log from its line FROM on (a rep's log is appended to across
# restarts, and its lines carry no pid).
wait_for_log_after() {
  local name="$1" pattern="$2" what="$3" pid="$4" from="$5"
  for _ in $(seq 1 600); do
    # Not a pipe: with pipefail, tail killed by SIGPIPE when grep -q
    # stops at a match would fail it.
    if grep -q "$pattern" <(tail -n "+$from" "$logs/$name.log" 2>/dev/null); then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "run: $name exited before $what; its log ($logs/$name.log):" >&2
      tail -n 20 "$logs/$name.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "run: $name did not $what within 60s; its log ($logs/$name.log):" >&2
  tail -n 20 "$logs/$name.log" >&2
  exit 1
}

# tls_section NAME: the "tls" config key for certs/NAME.crt, with a
# leading comma, or nothing without TLS.
tls_section() {
  if [ -n "$tls" ]; then
    printf ',\n  "tls": {"ca_cert": "%s", "cert": "%s", "key": "%s"}' \
      "$certs/ca.crt" "$certs/$1.crt" "$certs/$1.key"
  fi
}

# encryption_section: with TLS, the board also encrypts what it stores,
# under a key made on the first run and kept in $state/encryption.key
# (0600); nothing without TLS.
encryption_section() {
  if [ -n "$tls" ]; then
    printf ',\n  "encryption_keys": {"dev1": "%s"},\n  "active_key_label": "dev1"' "$(cat "$state/encryption.key")"
  fi
}

# board_config: a dev board. Like bbs -dev, but with short timings; the
# reps heartbeat every third of cell_presence_ttl.
board_config() {
  cat <<JSON
{
  "listen_address": "127.0.0.1:$bbs_port",
  "data_dir": "$state",
  "log_level": "info",
  "cell_presence_ttl": "6s",
  "convergence_interval": "2s"$(tls_section board)$(encryption_section)
}
JSON
}

if [ -n "$tls" ]; then
  # Idempotent: the CA and the certificates of an earlier run are kept.
  echo "run: certificates in $certs (bin/corkboard-certs)"
  if ! bin/corkboard-certs -out "$certs" -cells cell-z1,cell-z2 >"$logs/certs.log" 2>&1; then
    echo "run: writing the certificates failed:" >&2
    cat "$logs/certs.log" >&2
    exit 1
  fi
  if [ ! -s "$state/encryption.key" ]; then
    (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '\n' >"$state/encryption.key")
  fi
fi

# hello's droplets, and the specs that name them, before anything runs: a
# build failure stops here. Rebuilding gives the same bytes (see
# internal/droplet), so specs rendered by an earlier run stay valid.
echo "run: building hello's droplets into $droplets (log: $logs/droplets-build.log)"
if ! bin/droplets build -out "$droplets" -base-url "$asset_url" >"$logs/droplets-build.log" 2>&1; then
  echo "run: building the droplets failed:" >&2
  tail -n 20 "$logs/droplets-build.log" >&2
  exit 1
fi
start droplets bin/droplets serve -dir "$droplets" -listen "127.0.0.1:$asset_port"
droplets_pid=$!
wait_for_log droplets 'droplets: .*serving ' "serve" "$droplets_pid"

# 0600, made anew: with TLS the config holds the encryption key.
rm -f "$state/bbs.json"
(umask 077 && board_config >"$state/bbs.json")
start bbs bin/bbs -config "$state/bbs.json"
board_pid=$!
wait_for_log bbs 'bbs\.api-server\.listening' "listen" "$board_pid"

# rep_config ID ZONE N: a dev rep: short intervals, room for 8 hello
# instances (64 MB each) and then some.
rep_config() {
  local id="$1" zone="$2" n="$3"
  cat <<JSON
{
  "cell_id": "$id",
  "zone": "$zone",
  "capacity": {"memory_mb": 1024, "disk_mb": 1024, "instances": 16},
  "board_url": "$board_url",
  "listen_address": "127.0.0.1:$((rep_port_base + n))",
  "data_dir": "$state/$id",
  "apps_dir": "$root/bin",
  "port_range": "$((instance_port_base + 100 * (n - 1)))-$((instance_port_base + 99 + 100 * (n - 1)))",
  "poll_interval": "500ms",
  "bulk_sync_interval": "5s",
  "evacuation_timeout": "2m",
  "stop_grace_period": "1s",
  "stop_timeout": "5s"$(tls_section "$id")
}
JSON
}

# A rep exits when its cell drained (cork cell drain, SIGTERM): its
# instances moved to the other cell, and make run goes on without it.
# watch_rep says so on the terminal, and how to start it again: SIGHUP to
# this script starts every rep that is not running (start_reps), and a
# rep that starts registers its cell afresh, which ends the cell's
# draining. Nothing restarts a rep by itself: a drain is an operator's
# choice, and an undrain is the rep's next start.

# watch_rep ID PID FROM: in the background, waits for the rep to exit and
# then prints what happened (its log from line FROM on is this run's) and
# the command that starts it again. stop_all ends the watchers before it
# stops the reps.
watch_rep() {
  local id="$1" pid="$2" from="$3"
  (
    while kill -0 "$pid" 2>/dev/null; do sleep 1; done
    local why="exited"
    if grep -q '"message":"rep\.agent\.evacuate\.starting"' <(tail -n "+$from" "$logs/rep-$id.log"); then
      why="exited after its cell drained (its instances moved to the other cell)"
    fi
    cat <<EXITED
run: rep $id $why; log: $rel/logs/rep-$id.log
run: to start it again (its cell comes back, no longer draining): kill -HUP \$(cat $rel/run.pid)
EXITED
  ) &
  watcher_pids+=($!)
}

# cork_here runs bin/cork against this run's board (as the operator, under
# TLS).
cork_here() {
  if [ -n "$tls" ]; then
    BBS_URL="$board_url" BBS_CA_CERT="$certs/ca.crt" BBS_CERT="$certs/operator.crt" BBS_KEY="$certs/operator.key" bin/cork "$@"
  else
    BBS_URL="$board_url" bin/cork "$@"
  fi
}

# cell_draining ID: whether the board has the cell draining (a board that
# does not answer says no).
cell_draining() {
  cork_here cells -o table 2>/dev/null | awk -v id="$1" '$1 == id && $4 == "yes" { found = 1 } END { exit !found }'
}

# start_reps: starts each rep that is not running (or, its cell drained,
# is about to exit: it starts once it has), writing its config afresh, and
# waits until it registered its cell.
declare -A rep_pid_of=() rep_from_of=()
start_reps() {
  local n=0 cell id zone from pid
  for cell in cell-z1:z1 cell-z2:z2; do
    n=$((n + 1))
    id="${cell%%:*}"
    zone="${cell##*:}"
    if [ -n "${rep_pid_of[$id]:-}" ] && kill -0 "${rep_pid_of[$id]}" 2>/dev/null; then
      # A rep evacuating its drained cell exits once its instances have
      # moved: a SIGHUP that comes meanwhile starts it again after that,
      # rather than finding it running and leaving the cell drained. The
      # board says the cell drains from cork cell drain on; the rep learns
      # it at its next heartbeat (up to 2 s later) and only then evacuates,
      # so a SIGHUP in between asks the board.
      if ! grep -q '"message":"rep\.agent\.evacuate\.starting"' <(tail -n "+${rep_from_of[$id]}" "$logs/rep-$id.log") &&
        ! cell_draining "$id"; then
        continue
      fi
      echo "run: rep $id is evacuating its cell; it starts again once it has exited"
      while kill -0 "${rep_pid_of[$id]}" 2>/dev/null; do sleep 0.2; done
    fi
    rm -f "$state/rep-$id.json"
    (umask 077 && rep_config "$id" "$zone" "$n" >"$state/rep-$id.json")
    # Appended to, so that a restart keeps the log of the run before it;
    # from is where the new rep's lines begin.
    from=$(($(wc -l <"$logs/rep-$id.log") + 1))
    set -m
    bin/rep -config "$state/rep-$id.json" >>"$logs/rep-$id.log" 2>&1 &
    set +m
    pid=$!
    rep_pid_of[$id]=$pid
    rep_from_of[$id]=$from
    rep_pids+=("$pid")
    wait_for_log_after "rep-$id" 'rep\.agent\.registered' "register its cell" "$pid" "$from"
    watch_rep "$id" "$pid" "$from"
  done
}

for cell in cell-z1 cell-z2; do
  : >"$logs/rep-$cell.log"
done
# SIGHUP starts the reps that are not running (from here on: one that
# comes while the first start is under way finds them running). run.pid
# is for the command watch_rep prints.
trap 'echo "run: SIGHUP: starting the reps that are not running"; start_reps; echo "run: every rep is running"' HUP
echo $$ >"$state/run.pid"
start_reps

cork_env="export BBS_URL=$board_url"
dashboard_note=""
if [ -n "$tls" ]; then
  cork_env="export BBS_URL=$board_url BBS_CA_CERT=.data/certs/ca.crt BBS_CERT=.data/certs/operator.crt BBS_KEY=.data/certs/operator.key"
  dashboard_note="  (import a PKCS#12 of operator.crt/.key into the browser: docs/dashboard.md)"
  cat <<TLS
Mutual TLS: the board and the reps serve HTTPS and want a client certificate
of the CA in .data/certs (operator.crt for cork, client.crt for an API client).
The board encrypts what it stores (key in $rel/encryption.key); this cluster's
state is in $rel, apart from make run's.
TLS
fi

cat <<HINT
Corkboard is running:
  board    $board_url          logs: $rel/logs/bbs.log  config: $rel/bbs.json
  cell-z1  $scheme://127.0.0.1:$((rep_port_base + 1))  zone z1  logs: $rel/logs/rep-cell-z1.log
  cell-z2  $scheme://127.0.0.1:$((rep_port_base + 2))  zone z2  logs: $rel/logs/rep-cell-z2.log
  droplets $asset_url          dir: .data/droplets  logs: $rel/logs/droplets.log (one line per download)
  dashboard $board_url/ui/$dashboard_note

Next, in another terminal:
  $cork_env
  bin/cork set-domain cork                  # fresh domain: removing an LRP stops its instances
  bin/cork desire .data/droplets/lrps/hello.json
                                            # 4 instances of hello v1 from its droplet
                                            # (a droplet download per cell)
  bin/cork wait hello                       # until all 4 run
  bin/cork actual-lrps -o table             # RUNNING, with ADDRESS host:port->8080
  curl http://\$(bin/cork actual-lrps --guid hello --index 0 -o address)/
                                            # an instance: "version":"v1"
  grep 'GET /hello-' $rel/logs/droplets.log  # the downloads
  bin/cork update hello --definition .data/droplets/lrps/hello-v2-definition.json --id v2
  bin/cork rollout status hello --watch -o table   # a rollout to the v2 droplet
  bin/cork logs hello/0
  bin/cork cell drain cell-z1               # its instances move to cell-z2; its rep exits
  bin/cork wait hello                       # until they have moved
  $(printf '%-41s' "kill -HUP \$(cat $rel/run.pid)") # starts the reps that exited (the cell comes back)
(fixtures/lrps/hello-local.json runs bin/hello as it is, without a download.)
Ctrl-C stops everything.
HINT

# Runs until Ctrl-C (a rep that drained exits on its own, watch_rep says
# so, and the rest go on). A trapped signal (SIGHUP) ends wait, hence the
# loop.
while kill -0 "$board_pid" 2>/dev/null; do
  wait "$board_pid" || true
done
echo "run: the board exited on its own; see $logs/bbs.log" >&2
