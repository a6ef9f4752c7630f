#!/usr/bin/env bash
# Starts N `offgraph serve` replicas on consecutive loopback ports and HAProxy in
# front of them (deploy/haproxy/haproxy.cfg), and stays in the foreground until
# HAProxy exits or the script gets SIGINT/SIGTERM; then it stops HAProxy and
# sends each replica SIGTERM (it drains within its --shutdown-grace-s).
# Documented in deploy/README.md; tested by tests/deploy/haproxy_failover_test.py.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: deploy/haproxy/run-replicas.sh --model M [options] [-- extra `offgraph serve` flags]

  --model PATH               model for every replica (required)
  --replicas N               replicas to start, 1-64 (default 2)
  --port P                   HAProxy's listening port on 127.0.0.1 (default 8080)
  --first-replica-port Q     replica i listens on 127.0.0.1:Q+i-1 (default P+1)
  --offgraph PATH            the offgraph binary (default: build/offgraph, else on PATH)
  --haproxy PATH             the haproxy binary (default /usr/sbin/haproxy, else on PATH)
  --run-dir DIR              logs, pid files, the generated haproxy.cfg and the
                             runtime API socket (default: a new directory under /tmp)
  --ready-timeout-s S        how long a replica may take to load its model (default 300)
  --help                     this text

Every replica gets --host 127.0.0.1 --port Q+i-1 and the extra flags (e.g.
-- --parallel 4 --threads 2 --shutdown-grace-s 10). Once all are ready it prints
'[run-replicas] ready on http://127.0.0.1:P ...'.
EOF
}

die() { echo "run-replicas.sh: $*" >&2; exit 2; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]] && [ ${#1} -le 9 ]; }
check_port() {  # name value
  is_uint "$2" && [ "$2" -ge 1 ] && [ "$2" -le 65535 ] || die "$1 '$2' is not a port number in [1, 65535]"
}

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
model="" replicas=2 port=8080 first_port="" run_dir="" ready_timeout=300
offgraph="" haproxy=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --help|-h) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    --model|--replicas|--port|--first-replica-port|--offgraph|--haproxy|--run-dir|--ready-timeout-s)
      [ $# -ge 2 ] || die "$1 needs a value (see --help)"
      case "$1" in
        --model) model=$2 ;;
        --replicas) replicas=$2 ;;
        --port) port=$2 ;;
        --first-replica-port) first_port=$2 ;;
        --offgraph) offgraph=$2 ;;
        --haproxy) haproxy=$2 ;;
        --run-dir) run_dir=$2 ;;
        --ready-timeout-s) ready_timeout=$2 ;;
      esac
      shift 2 ;;
    *) die "unknown argument '$1' (serve flags go after --; see --help)" ;;
  esac
done

[ -n "$model" ] || die "--model is required (see --help)"
[ -e "$model" ] || die "--model '$model' does not exist"
is_uint "$replicas" && [ "$replicas" -ge 1 ] && [ "$replicas" -le 64 ] ||
  die "--replicas '$replicas' is not a whole number in [1, 64]"
check_port --port "$port"
[ -n "$first_port" ] || first_port=$((port + 1))
check_port --first-replica-port "$first_port"
last_port=$((first_port + replicas - 1))
[ "$last_port" -le 65535 ] || die "--first-replica-port $first_port + $replicas replicas passes port 65535"
if [ "$port" -ge "$first_port" ] && [ "$port" -le "$last_port" ]; then
  die "--port $port is one of the replicas' ports ($first_port-$last_port)"
fi
is_uint "$ready_timeout" && [ "$ready_timeout" -ge 1 ] || die "--ready-timeout-s '$ready_timeout' is not a whole number of seconds >= 1"

if [ -z "$offgraph" ]; then
  if [ -x "$repo/build/offgraph" ]; then offgraph=$repo/build/offgraph; else offgraph=$(command -v offgraph || true); fi
  [ -n "$offgraph" ] || die "no offgraph binary: build it (scripts/build.sh) or pass --offgraph PATH"
fi
[ -x "$offgraph" ] || die "--offgraph '$offgraph' is not an executable file"
if [ -z "$haproxy" ]; then
  if [ -x /usr/sbin/haproxy ]; then haproxy=/usr/sbin/haproxy; else haproxy=$(command -v haproxy || true); fi
  [ -n "$haproxy" ] || die "no haproxy binary: install it (scripts/setup.sh installs Debian's) or pass --haproxy PATH"
fi
[ -x "$haproxy" ] || die "--haproxy '$haproxy' is not an executable file"
if [ -z "$run_dir" ]; then
  run_dir=$(mktemp -d /tmp/offgraph-replicas.XXXXXX)
else
  mkdir -p "$run_dir" || die "--run-dir '$run_dir' cannot be created"
fi
[ -d "$run_dir" ] && [ -w "$run_dir" ] || die "--run-dir '$run_dir' is not a writable directory"

pids=()
haproxy_pid=""
stopping=0
# Stops HAProxy first (no new requests reach the replicas), then the replicas
# (SIGTERM: each finishes its running requests within its grace), each reaped.
cleanup() {
  [ "$stopping" = 1 ] && return
  stopping=1
  if [ -n "$haproxy_pid" ]; then kill -TERM "$haproxy_pid" 2>/dev/null || true; fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  if [ -n "$haproxy_pid" ]; then wait "$haproxy_pid" 2>/dev/null || true; fi
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT

for ((i = 1; i <= replicas; i++)); do
  p=$((first_port + i - 1))
  "$offgraph" serve --model "$model" --host 127.0.0.1 --port "$p" "${extra[@]}" \
    >"$run_dir/replica-$i.out" 2>"$run_dir/replica-$i.err" &
  pids+=($!)
  echo "$!" >"$run_dir/replica-$i.pid"
done

# Each replica prints one ready line on stdout once its model is loaded.
deadline=$((SECONDS + ready_timeout))
for ((i = 1; i <= replicas; i++)); do
  until grep -q '^\[serve\] ready on ' "$run_dir/replica-$i.out" 2>/dev/null; do
    if ! kill -0 "${pids[i - 1]}" 2>/dev/null; then
      echo "run-replicas.sh: replica $i (port $((first_port + i - 1))) exited before it was ready; its stderr:" >&2
      tail -n 20 "$run_dir/replica-$i.err" >&2
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "run-replicas.sh: replica $i was not ready within --ready-timeout-s $ready_timeout" >&2
      exit 1
    fi
    sleep 0.1
  done
done

# The committed config with this run's server lines in place of its own.
cfg=$run_dir/haproxy.cfg
{
  grep -v -E '^[[:space:]]*server r[0-9]+ ' "$here/haproxy.cfg"
  for ((i = 1; i <= replicas; i++)); do
    echo "    server r$i 127.0.0.1:$((first_port + i - 1))"
  done
} >"$cfg"
export OG_LB_BIND=127.0.0.1:$port OG_HAPROXY_SOCKET=$run_dir/haproxy.sock
"$haproxy" -c -q -f "$cfg" || die "the generated $cfg is not valid (haproxy -c above)"
rm -f "$OG_HAPROXY_SOCKET"
"$haproxy" -db -f "$cfg" >"$run_dir/haproxy.log" 2>&1 &
haproxy_pid=$!
echo "$haproxy_pid" >"$run_dir/haproxy.pid"

# HAProxy is up once its port accepts a connection.
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  kill -0 "$haproxy_pid" 2>/dev/null || { cat "$run_dir/haproxy.log" >&2; die "haproxy exited at start (log above)"; }
  sleep 0.05
done
echo "[run-replicas] ready on http://127.0.0.1:$port | $replicas replicas on 127.0.0.1:$first_port-$last_port | run dir $run_dir"

set +e
wait "$haproxy_pid"
rc=$?
haproxy_pid=""
echo "run-replicas.sh: haproxy exited ($rc); stopping the replicas" >&2
exit "$rc"
