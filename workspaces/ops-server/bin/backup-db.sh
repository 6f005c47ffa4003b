#!/usr/bin/env bash
# backup-db.sh: nightly pg_dump of the lumen database, kept 14 days locally and copied offsite.
set -euo pipefail
usage() { echo "usage: $0 [--dry-run]" >&2; exit 2; }
dry_run=0
[[ "${1:-}" == "--dry-run" ]] && dry_run=1
[[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && usage
out="/var/backups/pg/lumen-$(date -u +%F).dump"
if (( dry_run )); then echo "would dump lumen to $out"; exit 0; fi
pg_dump -Fc -d lumen -f "$out"
find /var/backups/pg -name 'lumen-*.dump' -mtime +14 -delete
rclone copy "$out" offsite:lumen-backups/
echo "backup ok: $out"
