#!/usr/bin/env bash
# npm run conformance:osc: the real OpenStack CLI (python3-openstackclient + python3-osc-placement) against a
# fresh Berth: each step runs one `openstack ...` command and checks its output. Prints ok/FAIL per step and a
# total; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v openstack >/dev/null || { echo "openstack not found (apt-get install -y python3-osc-placement)"; exit 2; }
npm run build --silent >/dev/null || exit 1

work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
printf '{"tokens":[{"name":"admin","sha256":"%s","roles":["admin"]}]}\n' "$(sha admin)" >"$work/tokens.json"
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
BERTH_HOST=127.0.0.1 BERTH_PORT=$port BERTH_DATA_DIR=:memory: BERTH_LOG_LEVEL=warn BERTH_AUTH_TOKENS_FILE="$work/tokens.json" \
  node dist/main.js >"$work/berth.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done

os() { openstack --os-auth-type admin_token --os-token admin --os-endpoint "http://127.0.0.1:$port" --os-placement-api-version 1.39 "$@" 2>&1; }
passed=0
failed=0
# step NAME EXPECTED-REGEX COMMAND...: the command's output must match the (extended) regex.
step() {
  local name=$1 want=$2
  shift 2
  local out
  out=$("$@")
  if grep -Eq -- "$want" <<<"$out"; then
    passed=$((passed + 1))
    echo "ok   $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name: wanted /$want/, got:"
    sed 's/^/       /' <<<"$out"
  fi
}

RP=11111111-2222-4333-8444-555555555555
CHILD=11111111-2222-4333-8444-666666666666
C=22222222-3333-4444-8555-666666666666
AGG=33333333-4444-4555-8666-777777777777
step 'resource provider create' "$RP" os resource provider create cn1 --uuid $RP -f value -c uuid
step 'resource provider create --parent-provider' "^$RP$" os resource provider create cn1-numa0 --uuid $CHILD --parent-provider $RP -f value -c root_provider_uuid
step 'resource provider list' '^cn1$' os resource provider list -f value -c name
step 'inventory set with a step size' 'DISK_GB 10 1000' os resource provider inventory set $RP --resource VCPU=16 --resource VCPU:allocation_ratio=4.0 \
  --resource MEMORY_MB=32768 --resource DISK_GB:step_size=10 --resource DISK_GB=1000 -f value -c resource_class -c step_size -c total
step 'inventory show' '^64$' sh -c "openstack --os-auth-type admin_token --os-token admin --os-endpoint http://127.0.0.1:$port --os-placement-api-version 1.39 resource provider inventory list $RP -f json | python3 -c 'import json,sys; print([int((i[\"total\"]-i[\"reserved\"])*i[\"allocation_ratio\"]) for i in json.load(sys.stdin) if i[\"resource_class\"]==\"VCPU\"][0])'"
step 'trait create' '^$' os trait create CUSTOM_GOLD
step 'trait create (another)' '^$' os trait create CUSTOM_SILVER
step 'resource provider trait set' 'CUSTOM_GOLD' os resource provider trait set $RP --trait CUSTOM_GOLD --trait HW_CPU_X86_AVX2 -f value
step 'trait list --associated' '^CUSTOM_GOLD$' os trait list --associated -f value
step 'resource provider list --required (any of)' "^$RP$" os resource provider list --required CUSTOM_GOLD,CUSTOM_SILVER -f value -c uuid
step 'resource provider list --forbidden' '^$' os resource provider list --forbidden CUSTOM_GOLD --resource VCPU=1 -f value -c uuid
step 'resource provider list --resource (step size refuses 15)' '^$' os resource provider list --resource DISK_GB=15 -f value -c uuid
step 'resource provider list --resource (20 fits)' "^$RP$" os resource provider list --resource DISK_GB=20 -f value -c uuid
step 'resource provider aggregate set' "$AGG" os resource provider aggregate set $RP --aggregate $AGG --generation 2 -f value
step 'allocation candidate list' "$RP" os allocation candidate list --resource VCPU=2 --resource MEMORY_MB=2048 --required CUSTOM_GOLD -f value -c 'resource provider'
step 'resource provider allocation set' 'INSTANCE' os resource provider allocation set $C --project-id p1 --user-id u1 --consumer-type INSTANCE \
  --allocation rp=$RP,VCPU=2,MEMORY_MB=2048,DISK_GB=20 -f value
step 'allocation refused: step size' 'violate inventory constraints' os resource provider allocation set $C --project-id p1 --user-id u1 --consumer-type INSTANCE \
  --allocation rp=$RP,DISK_GB=15
step 'resource provider show --allocations' "'consumer_generation': 1" os resource provider show $RP --allocations -f value -c allocations
step 'resource usage show' 'INSTANCE' os resource usage show p1 -f value
step 'resource provider usage show' 'VCPU 2' os resource provider usage show $RP -f value
step 'inventory delete in use' 'in use' os resource provider inventory delete $RP --resource-class VCPU
step 'resource provider allocation delete' '^$' os resource provider allocation delete $C
step 'resource provider delete a parent' 'It has child resource providers' os resource provider delete $RP
RP2=11111111-2222-4333-8444-777777777777
step 'resource provider create (a second root)' "$RP2" os resource provider create cn2 --uuid $RP2 -f value -c uuid
step 'resource provider set (re-parent, 1.37+)' "^$RP2$" os resource provider set $CHILD --name numa0 --parent-provider $RP2 -f value -c root_provider_uuid
step 'resource provider delete' '^$' os resource provider delete $RP

echo
echo "total: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
