#!/usr/bin/env bash
# The README's quick start, runnable as is against `npm start` (needs curl and jq).
set -euo pipefail
export EDGEQ_URL=${EDGEQ_URL:-http://127.0.0.1:8787}   # the variable the edgeq CLI reads too
export AUTH="Authorization: Bearer ${EDGEQ_TOKEN:-edgeq-dev-token}"
json=(-H "$AUTH" -H "Content-Type: application/json")
Q=${QUEUE:-demo-$(date +%s)}   # a fresh queue per run, so a second run starts clean

# 1. Enqueue a task (201: its id, state and whether it was deduplicated).
curl -s -X POST "$EDGEQ_URL/v1/queues/$Q/tasks" "${json[@]}" -d '{"payload":{"text":"hello"},"priority":5}'; echo

# 2. Lease it: the response carries the lease_token that fences every later write.
LEASE=$(curl -s -X POST "$EDGEQ_URL/v1/queues/$Q/lease" "${json[@]}" -d '{"max":1,"visibility_timeout_s":30}')
ID=$(echo "$LEASE" | jq -r '.tasks[0].id'); TOKEN=$(echo "$LEASE" | jq -r '.tasks[0].lease_token')

# 3. Complete it with a result.
curl -s -X POST "$EDGEQ_URL/v1/tasks/$ID/complete" "${json[@]}" -d "{\"lease_token\":\"$TOKEN\",\"result\":{\"ok\":true}}"; echo

# 4. A task that fails until it is dead (2 attempts; retry_after_s 0 makes the retry due at once).
ID=$(curl -s -X POST "$EDGEQ_URL/v1/queues/$Q/tasks" "${json[@]}" -d '{"payload":{"text":"doomed"},"max_attempts":2}' | jq -r '.tasks[0].id')
for attempt in 1 2; do
  TOKEN=$(curl -s -X POST "$EDGEQ_URL/v1/queues/$Q/lease" "${json[@]}" -d '{"max":1}' | jq -r '.tasks[0].lease_token')
  curl -s -X POST "$EDGEQ_URL/v1/tasks/$ID/fail" "${json[@]}" -d "{\"lease_token\":\"$TOKEN\",\"error\":\"renderer crashed\",\"retry_after_s\":0}"; echo
done
curl -s "$EDGEQ_URL/v1/tasks/$ID" -H "$AUTH" | jq '{state, attempts, errors}'

# 5. Redrive the queue's dead tasks: back to pending with attempts reset.
curl -s -X POST "$EDGEQ_URL/v1/queues/$Q/redrive" "${json[@]}" -d '{}'; echo
curl -s "$EDGEQ_URL/v1/queues/$Q/stats" -H "$AUTH"; echo
