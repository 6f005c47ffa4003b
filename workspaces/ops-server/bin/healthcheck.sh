#!/usr/bin/env bash
# healthcheck.sh: GET /healthz on both app servers; page #ops-pager after 2 failures in a row.
set -euo pipefail
state=/var/lib/ops/healthcheck.failures
for host in app-01 app-02; do
  if curl -fsS --max-time 5 "http://$host:8000/healthz" >/dev/null; then
    echo "$(date -u +%FT%TZ) $host ok"
    sed -i "/^$host$/d" "$state" 2>/dev/null || true
  else
    echo "$(date -u +%FT%TZ) $host FAILED"
    if grep -qx "$host" "$state" 2>/dev/null; then
      /opt/ops/scripts/page.sh "healthcheck failed twice on $host"
    else
      echo "$host" >> "$state"
    fi
  fi
done
