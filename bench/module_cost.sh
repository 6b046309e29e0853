#!/usr/bin/env bash
# Median wall time of a converged, no-op module process on a test host, against baselines run
# in the same go: a bare process (/bin/true) and the one `systemctl show` a no-op needs.
#
#   bench/module_cost.sh [RUNS]      (default 20; needs a bed that is up: testbed.sh up th1)
set -euo pipefail
RUNS=${1:-20}
REPO=$(cd "$(dirname "$0")/.." && pwd)
TB=$REPO/tests/testbed/testbed.sh
HOST=th1
ROOT=/proc/$(eval "$("$TB" env)"; awk -v h=$HOST '$1==h {for(i=1;i<=NF;i++) if ($i ~ /^refit_testhost_pid=/) {sub(/.*=/,"",$i); print $i}}' "$REFIT_TESTBED_RUN/inventory.ini")/root
[ -d "$ROOT/etc" ] || { echo "host $HOST is not up; run: $TB up $HOST" >&2; exit 1; }

cargo build --release --quiet -p refit-modules --manifest-path "$REPO/Cargo.toml"
install -m 0755 "$REPO/target/release/container_unit" "$ROOT/usr/local/bin/refit-bench-container_unit"
port=18090
cat > "$ROOT/tmp/refit-bench-args.json" <<JSON
{"name": "bench-noop", "image": "127.0.0.1:5000/svc:1.0", "network": "host", "env": {"PORT": "$port"}, "min_healthy_time": 200}
JSON

# Runs CMD RUNS times inside the host and prints the median in microseconds.
median_us() {
    "$TB" exec "$HOST" bash -c '
        runs=$1; shift
        for _ in $(seq "$runs"); do
            t0=$(date +%s%N); "$@" > /dev/null 2>&1; t1=$(date +%s%N)
            echo $(( (t1 - t0) / 1000 ))
        done | sort -n | awk "{a[NR]=\$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}"
    ' _ "$RUNS" "$@"
}

"$TB" exec "$HOST" /usr/local/bin/refit-bench-container_unit /tmp/refit-bench-args.json > /dev/null
noop=$("$TB" exec "$HOST" /usr/local/bin/refit-bench-container_unit /tmp/refit-bench-args.json)
case $noop in *'"changed":false'*) ;; *) echo "the second run was not a no-op: $noop" >&2; exit 1 ;; esac

true_us=$(median_us /bin/true)
show_us=$(median_us systemctl show --property=ActiveState,InvocationID bench-noop.service)
unit_us=$(median_us /usr/local/bin/refit-bench-container_unit /tmp/refit-bench-args.json)

"$TB" exec "$HOST" bash -c 'echo "{\"name\": \"bench-noop\", \"state\": \"absent\"}" > /tmp/a.json; /usr/local/bin/refit-bench-container_unit /tmp/a.json > /dev/null; rm -f /tmp/a.json /tmp/refit-bench-args.json /usr/local/bin/refit-bench-container_unit'

ms() { awk -v us="$1" 'BEGIN {printf "%.1f", us / 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a / b}'; }
echo "| process (median of $RUNS, on $HOST) | ms | ratio to systemctl show |"
echo "| --- | --- | --- |"
echo "| /bin/true | $(ms "$true_us") | $(ratio "$true_us" "$show_us") |"
echo "| systemctl show (one unit) | $(ms "$show_us") | 1.0 |"
echo "| container_unit, converged no-op | $(ms "$unit_us") | $(ratio "$unit_us" "$show_us") |"
