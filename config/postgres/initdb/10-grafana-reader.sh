#!/bin/sh
# Runs once, when the postgres container initialises an empty data volume: creates the read-only
# role Grafana's PostgreSQL data source uses. Tables are created later by `calmon migrate` as
# $POSTGRES_USER; the default privileges give the reader SELECT on them (and nothing else).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v reader="$GRAFANA_PG_USER" -v password="$GRAFANA_PG_PASSWORD" \
  -v owner="$POSTGRES_USER" -v db="$POSTGRES_DB" <<'SQL'
CREATE ROLE :"reader" LOGIN PASSWORD :'password';
GRANT CONNECT ON DATABASE :"db" TO :"reader";
GRANT USAGE ON SCHEMA public TO :"reader";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT SELECT ON TABLES TO :"reader";
SQL
