#!/usr/bin/env bash
# The services the suite uses, from Debian's packages, started by the project itself (no machine here starts
# one): a PostgreSQL cluster on 127.0.0.1:5432 that lets user `postgres` in without a password.
# Idempotent: a running, reachable server is left alone; a stopped or missing one is installed, created,
# opened to loopback and started. `make services` runs this; `make test` runs it first.
# Also Debian's nats-server (installed only: the event publisher's tests start their own servers).
set -euo pipefail

PORT=5432
log() { echo "services: $*"; }

apt_install() {
	# The package lists may be missing or stale on a new machine: try as it is, then refresh once.
	apt-get install -y -q "$@" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "$@" >/dev/null; }
}

if ! command -v nats-server >/dev/null; then
	log "installing Debian's nats-server"
	apt_install nats-server
fi

reachable() { pg_isready -q -h 127.0.0.1 -p "$PORT" -U postgres 2>/dev/null && psql -h 127.0.0.1 -p "$PORT" -U postgres -w -Atc 'select 1' postgres >/dev/null 2>&1; }

if command -v pg_isready >/dev/null && reachable; then
	log "PostgreSQL already up on 127.0.0.1:$PORT"
	exit 0
fi

server_versions() { for bin in /usr/lib/postgresql/*/bin/postgres; do [ -x "$bin" ] && basename "$(dirname "$(dirname "$bin")")"; done | sort -V; }

if ! command -v pg_lsclusters >/dev/null || [ -z "$(server_versions)" ]; then
	log "installing Debian's postgresql"
	apt_install postgresql
fi

version=$(server_versions | tail -n 1)
if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main"' | grep -q .; then
	log "creating cluster $version/main"
	pg_createcluster "$version" main --port "$PORT" >/dev/null
fi

# Debian asks 127.0.0.1 for a password; the suite connects as `postgres` without one. Our lines go first
# (pg_hba.conf is read top down) and only once.
hba=/etc/postgresql/$version/main/pg_hba.conf
marker="# paimon-coordinator: trust user postgres on loopback"
if ! grep -qF "$marker" "$hba"; then
	tmp=$(mktemp)
	{
		echo "$marker"
		echo "host    all    postgres    127.0.0.1/32    trust"
		echo "host    all    postgres    ::1/128         trust"
		cat "$hba"
	} >"$tmp"
	cat "$tmp" >"$hba"
	rm -f "$tmp"
fi

# The suite opens a database per test session and each server process pools connections: leave room.
conf=/etc/postgresql/$version/main/conf.d/paimon-coordinator.conf
mkdir -p "$(dirname "$conf")"
printf "listen_addresses = '127.0.0.1'\nport = %s\nmax_connections = 300\n" "$PORT" >"$conf.new"
if ! cmp -s "$conf.new" "$conf" 2>/dev/null; then mv "$conf.new" "$conf"; else rm -f "$conf.new"; fi

status=$(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $4}')
case "$status" in
online*) pg_ctlcluster "$version" main restart ;;  # up but not reachable as configured: apply the config
*) pg_ctlcluster "$version" main start ;;
esac

for _ in $(seq 1 60); do
	if reachable; then
		log "PostgreSQL $version up on 127.0.0.1:$PORT (user postgres, trust)"
		exit 0
	fi
	sleep 0.5
done
log "PostgreSQL did not become reachable; its log:"
tail -n 30 "/var/log/postgresql/postgresql-$version-main.log" >&2 || true
exit 1
