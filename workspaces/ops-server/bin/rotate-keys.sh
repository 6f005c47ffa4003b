#!/usr/bin/env bash
# rotate-keys.sh: rotate the app's API signing key and push the new public key to both servers.
set -euo pipefail
usage() { echo "usage: $0 [--dry-run]" >&2; exit 2; }
[[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && usage
new="/var/lib/ops/keys/signing-$(date -u +%Y%m).pem"
if [[ "${1:-}" == "--dry-run" ]]; then echo "would create $new"; exit 0; fi
openssl genpkey -algorithm ed25519 -out "$new"
for host in app-01 app-02; do
  openssl pkey -in "$new" -pubout | ssh "$host" 'sudo tee /etc/lumen/signing.pub >/dev/null'
done
echo "rotated: $new"
