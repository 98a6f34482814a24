#!/usr/bin/env bash
# Starts a streaming hot standby of the local PostgreSQL cluster (the
# primary on 127.0.0.1:5432) for the read-replica tests: pg_basebackup -R
# into a directory under /tmp, its own port (default 5433), run by the
# cluster's own user. Idempotent: a standby already answering on the port
# is left alone. What it changes on the primary, once: a pg_hba.conf line
# "host replication all 127.0.0.1/32 trust" (then a reload), since the
# Debian default admits no replication connection.
# Usage: bash .ci/pg-replica.sh [PORT]; prints the replica's DSN last.
set -euo pipefail
PORT="${1:-5433}"
DIR="/tmp/hermesstate-pg-replica-$PORT"
VER="$(ls /etc/postgresql | head -1)"
BIN="/usr/lib/postgresql/$VER/bin"
HBA="/etc/postgresql/$VER/main/pg_hba.conf"
DSN="postgres://postgres@127.0.0.1:$PORT/test?sslmode=disable"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

if pg_isready -h 127.0.0.1 -p "$PORT" -q 2>/dev/null; then
  echo "$DSN"; exit 0
fi
if ! grep -qE '^\s*host\s+replication\s+all\s+127\.0\.0\.1/32\s+trust' "$HBA"; then
  echo "host replication all 127.0.0.1/32 trust  # added by hermesstate .ci/pg-replica.sh" >> "$HBA"
  psql -qAt -h 127.0.0.1 -p 5432 -U postgres -d postgres -c "SELECT pg_reload_conf()" >/dev/null
fi
rm -rf "$DIR"
mkdir -p "$DIR"
chown postgres:postgres "$DIR" 2>/dev/null || true
chmod 700 "$DIR"
as_pg "$BIN/pg_basebackup" -h 127.0.0.1 -p 5432 -U postgres -D "$DIR" -R -X stream -c fast
# The Debian cluster keeps its configuration in /etc: give the copy its own.
cat > "$DIR/postgresql.conf" <<CONF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
hot_standby = on
hot_standby_feedback = on
max_connections = 100
shared_buffers = 128MB
CONF
printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' > "$DIR/pg_hba.conf"
: > "$DIR/pg_ident.conf"
chown postgres:postgres "$DIR"/*.conf 2>/dev/null || true
as_pg "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w -t 60 start >/dev/null
for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p "$PORT" -q && break; sleep 1; done
echo "$DSN"
