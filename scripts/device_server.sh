# Sourced by the device scripts that start servers: start and stop one `troupe serve` or
# `troupe cluster up` at a time, its logs under $out (which the script sets).
server=""
url=""
# Runs "$@" (a command that prints "serving ... on http://...") in the background with its
# logs at $out/$name.{out,err}, and waits up to $wait_s seconds for its URL (in $url).
start() {
  local name=$1 wait_s=$2
  shift 2
  "$@" >"$out/$name.out" 2>"$out/$name.err" &
  server=$!
  for _ in $(seq $((wait_s * 2))); do
    grep -q "serving" "$out/$name.out" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.5
  done
  url=$(grep -o 'http://[0-9.:]*' "$out/$name.out" | head -1)
  if [ -z "$url" ]; then
    echo "$name did not start:"
    tail -8 "$out/$name.err"
    stop
    return 1
  fi
}

# SIGTERM, and SIGKILL after 30 s: a server that hangs in its drain ends all the same.
stop() {
  [ -n "$server" ] || return 0
  kill -TERM "$server" 2>/dev/null
  for _ in $(seq 60); do
    kill -0 "$server" 2>/dev/null || break
    sleep 0.5
  done
  kill -KILL "$server" 2>/dev/null
  wait "$server" 2>/dev/null
  server=""
}
trap stop EXIT
