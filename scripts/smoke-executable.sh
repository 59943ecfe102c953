#!/usr/bin/env bash
# Smoke test of the single executable, run with an empty environment (no node, no node_modules):
# version, first start on a temp data dir, login, create and list an identity, ott enrollment, API docs, snapshot,
# a large import (on its own thread), the edge router (online, TLS on its port), SIGTERM.
set -euo pipefail
exe=$(cd "$(dirname "$0")/.." && pwd)/dist/ztc
[ -x "$exe" ] || { echo "no $exe: run npm run package first" >&2; exit 1; }
work=$(mktemp -d /tmp/ztc-smoke-XXXXXX)
# Three ports in a row below Linux's ephemeral range (32768 and up): a port in it may be the local end of
# some other program's outgoing connection, and binding it then fails (seen once in CI). Any taken one
# (answering on 127.0.0.1) sends us to another draw.
for _ in $(seq 1 20); do
  port=$(( 20000 + RANDOM % 12000 ))
  taken=""
  for p in $port $((port + 1)) $((port + 2)); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && taken=1; done
  [ -z "$taken" ] && break
done
run() { env -i HOME="$work" ZTC_HOME="$work/home" TMPDIR="$work" PATH=/nonexistent "$exe" "$@"; }
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

run version | grep -q '^cli ' || { echo "FAIL: version"; exit 1; }
env -i HOME="$work" TMPDIR="$work" PATH=/nonexistent "$exe" serve --data-dir "$work/data" --port "$port" --bind 127.0.0.1 --hostnames 127.0.0.1 --router-port $((port + 1)) --ctrl-port $((port + 2)) --admin-password smoke-pass-1 --log-level warn > "$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 150); do
  /usr/bin/curl -skf "https://127.0.0.1:$port/version" >/dev/null 2>&1 && break
  sleep 0.2
done
/usr/bin/curl -skf "https://127.0.0.1:$port/version" >/dev/null || { echo "FAIL: serve did not come up"; cat "$work/serve.log"; exit 1; }
run login "https://127.0.0.1:$port" -u admin -p smoke-pass-1 --yes | grep -q 'logged in' || { echo "FAIL: login"; exit 1; }
run identity create smoke-device --type Device | grep -q 'created identity' || { echo "FAIL: create"; exit 1; }
run identity list 'name = "smoke-device"' -o json | grep -q '"name": "smoke-device"' || { echo "FAIL: list"; exit 1; }
# ott enrollment: the CSR is signed on a crypto worker thread, whose program the executable embeds.
run identity create smoke-enroll --type Device --enroll ott -o "$work/enroll.jwt" >/dev/null || { echo "FAIL: create with ott"; exit 1; }
run enroll "$work/enroll.jwt" --out "$work/enroll.json" | grep -q 'enrolled' || { echo "FAIL: ott enrollment"; exit 1; }
grep -q 'BEGIN CERTIFICATE' "$work/enroll.json" || { echo "FAIL: no certificate in the identity file"; exit 1; }
size=$(/usr/bin/curl -skf -o /dev/null -w '%{size_download}' "https://127.0.0.1:$port/docs/swagger-ui-bundle.js") || size=0
[ "$size" -gt 100000 ] || { echo "FAIL: API docs assets ($size bytes)"; exit 1; }
run db snapshot | grep -q 'snapshot written' || { echo "FAIL: db snapshot"; exit 1; }
# A large import (over 100 KiB) runs on a thread of its own, from a file the executable unpacks.
{ printf '{"ztcModel":1,"identities":['
  for i in $(seq 1 2000); do [ "$i" -gt 1 ] && printf ','; printf '{"name":"smoke-bulk-%04d","type":"Device","isAdmin":false,"roleAttributes":["bulk"]}' "$i"; done
  printf ']}'; } > "$work/model.json"
run import "$work/model.json" -o json | grep -q '"applied": true' || { echo "FAIL: import"; tail -20 "$work/serve.log"; exit 1; }
ls "$work"/ztc-*/import-worker.mjs >/dev/null 2>&1 || { echo "FAIL: the import thread's program was not unpacked"; exit 1; }
run identity list 'name = "smoke-bulk-2000"' -o json | grep -q '"name": "smoke-bulk-2000"' || { echo "FAIL: the import's last identity"; exit 1; }
# The edge router runs on its own thread, from a file the executable unpacks: online, and speaking TLS.
run edge-router list -o json | grep -q '"isOnline": true' || { echo "FAIL: the edge router is not online"; cat "$work/serve.log"; exit 1; }
# A few tries, and what openssl and serve said when none answers: one probe failed in CI with the
# router online (its listener is up before it reports online) and passed five times after; the cause
# is not known yet (a 5 s timeout on a loaded machine is the likeliest).
tls=""
for _ in $(seq 1 10); do
  probe=$(echo | timeout 5 /usr/bin/openssl s_client -connect "127.0.0.1:$((port + 1))" 2>&1) && { tls=1; break; }
  sleep 0.5
done
[ -n "$tls" ] || { echo "FAIL: no TLS on the edge router's port"; echo "$probe" | tail -5; tail -20 "$work/serve.log"; exit 1; }
kill -TERM "$pid"
wait "$pid" && status=0 || status=$?
pid=
[ "$status" = 0 ] || { echo "FAIL: serve exited with $status on SIGTERM"; exit 1; }
echo "smoke: 11 passed, 0 failed"
