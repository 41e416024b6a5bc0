#!/usr/bin/env bash
# The real Cinder client against a fresh Berth: `cinder get-pools`, `get-pools --detail` and `--filters` must list
# what Berth's own GET /pools?detail=true says. Needs the `cinder` command (Debian: apt-get install
# python3-cinderclient) and python3. Exits non-zero on the first mismatch. Usage: npm run conformance:cinder
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cinder >/dev/null || { echo "conformance:cinder: the cinder client is not installed (apt-get install python3-cinderclient)" >&2; exit 2; }
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
BASE="http://127.0.0.1:$PORT"
LOG=$(mktemp)
# A fresh Berth that keeps nothing; cinderclient's noauth sends no token Berth would know.
BERTH_HOST=127.0.0.1 BERTH_PORT=$PORT BERTH_DATA_DIR=:memory: BERTH_ALLOW_UNAUTHENTICATED=true BERTH_LOG_LEVEL=warn \
  node --import tsx src/main.ts >"$LOG" 2>&1 &
BERTH=$!
trap 'kill "$BERTH" 2>/dev/null || true; wait "$BERTH" 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 100); do
  curl -fsS "$BASE/readyz" >/dev/null 2>&1 && break
  kill -0 "$BERTH" 2>/dev/null || { echo "Berth did not start:" >&2; cat "$LOG" >&2; exit 1; }
  sleep 0.2
done

curl -fsS -X PUT "$BASE/backends/node1@lvm" -H 'content-type: application/json' -d '{
  "volume_backend_name": "lvm", "vendor_name": "Open Source", "driver_version": "3.0.0", "storage_protocol": "iSCSI",
  "pools": [
    {"pool_name": "pool1", "total_capacity_gb": 1024, "free_capacity_gb": 500, "provisioned_capacity_gb": 924,
     "max_over_subscription_ratio": "auto", "thin_provisioning_support": true, "thick_provisioning_support": true},
    {"pool_name": "pool2", "total_capacity_gb": 100, "free_capacity_gb": 100, "thick_provisioning_support": true}
  ]}' >/dev/null

export OS_PROJECT_ID=demo
CINDER=(cinder --os-auth-type noauth --os-endpoint "$BASE/volume/v3/demo")
OUT=$(mktemp -d)
trap 'kill "$BERTH" 2>/dev/null || true; wait "$BERTH" 2>/dev/null || true; rm -rf "$LOG" "$OUT"' EXIT
curl -fsS "$BASE/pools?detail=true" >"$OUT/berth.json"
curl -fsS -G "$BASE/pools" --data-urlencode 'volume_type={"extra_specs":{"thin_provisioning_support":"<is> True"}}' >"$OUT/berth-thin.json"
"${CINDER[@]}" get-pools >"$OUT/summary.txt"
"${CINDER[@]}" get-pools --detail >"$OUT/detail.txt"
"${CINDER[@]}" get-pools --filters 'name=node1@lvm#pool2' >"$OUT/by-name.txt"
"${CINDER[@]}" get-pools --detail --filters 'volume_type={thin_provisioning_support:<is> True}' >"$OUT/by-type.txt"

python3 - "$OUT" <<'EOF'
import json, sys

out = sys.argv[1]
berth = json.load(open(f"{out}/berth.json"))["pools"]
failures = []

def tables(name):
    """cinder prints one Property/Value table per pool: a list of {property: value}."""
    pools, current = [], None
    for line in open(f"{out}/{name}"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("+") or len(cells) != 2:
            continue
        if cells == ["Property", "Value"]:
            current = {}
            pools.append(current)
        elif current is not None:
            current[cells[0]] = cells[1]
    return pools

def shown(value):
    """How cinderclient's print_dict shows a scalar."""
    return str(value) if not isinstance(value, bool) else ("True" if value else "False")

def expect(label, got, want):
    if got != want:
        failures.append(f"{label}: cinder shows {got!r}, Berth says {want!r}")

expect("get-pools names", [p.get("name") for p in tables("summary.txt")], [p["name"] for p in berth])
detail = tables("detail.txt")
expect("get-pools --detail names", [p.get("name") for p in detail], [p["name"] for p in berth])
for mine, theirs in zip(berth, detail):
    for key, value in mine["capabilities"].items():
        if isinstance(value, (dict, list)):
            continue
        expect(f"{mine['name']} {key}", theirs.get(key), shown(value))
expect("--filters name=", [p.get("name") for p in tables("by-name.txt")], ["node1@lvm#pool2"])
# Only pool1 reports thin provisioning; pool2 lacks the capability, which CapabilitiesFilter refuses.
thin = [p["name"] for p in json.load(open(f"{out}/berth-thin.json"))["pools"]]
expect("GET /pools?volume_type= (thin)", thin, ["node1@lvm#pool1"])
expect("--filters volume_type=", [p.get("name") for p in tables("by-type.txt")], thin)

if failures:
    print("conformance:cinder FAILED", *failures, sep="\n  ", file=sys.stderr)
    sys.exit(1)
print(f"conformance:cinder passed: get-pools, get-pools --detail ({sum(len(p) for p in detail)} properties), "
      "--filters name=, --filters volume_type= agree with GET /pools?detail=true")
EOF
