#!/bin/sh
# The container's settings, environment variables to sqsqlite serve's options (docs/howto/emulator.md
# has the table); arguments given to the container are added after them. exec: sqsqlite serve
# becomes PID 1 and gets SIGTERM itself.
set -eu
set -- --db "${SQSQLITE_DB:-/data/sqsqlite.db}" --host "${SQSQLITE_HOST:-0.0.0.0}" --port "${SQSQLITE_PORT:-9324}" "$@"
[ -n "${SQSQLITE_REGION:-}" ] && set -- "$@" --region "$SQSQLITE_REGION"
[ -n "${SQSQLITE_ACCOUNT_ID:-}" ] && set -- "$@" --account-id "$SQSQLITE_ACCOUNT_ID"
[ -n "${SQSQLITE_WORKERS:-}" ] && set -- "$@" --workers "$SQSQLITE_WORKERS"
case "${SQSQLITE_CONSOLE_READ_ONLY:-}" in 1|true|yes) set -- "$@" --console-read-only ;; esac
case "${SQSQLITE_VERBOSE:-}" in 1|true|yes) set -- "$@" --verbose ;; esac
for name in ${SQSQLITE_ALLOW_HOSTS:-}; do set -- "$@" --allow-host "$name"; done
# Queues: SQSQLITE_QUEUES (read by serve itself), else an ElasticMQ file where ElasticMQ's image
# keeps it, else /etc/sqsqlite/queues.yaml, .yml or .json when mounted.
if [ -z "${SQSQLITE_QUEUES:-}" ]; then
  for file in /opt/elasticmq.conf /etc/sqsqlite/queues.yaml /etc/sqsqlite/queues.yml /etc/sqsqlite/queues.json; do
    if [ -f "$file" ]; then set -- "$@" --queues "$file"; break; fi
  done
fi
# Init scripts: SQSQLITE_INIT_DIR (read by serve itself), else LocalStack's folder (boot.d, ready.d).
if [ -z "${SQSQLITE_INIT_DIR:-}" ] && [ -d /etc/localstack/init ]; then
  set -- "$@" --init-dir /etc/localstack/init
fi
# SQSQLITE_ACCESS_KEY and SQSQLITE_SECRET_KEY are read by serve itself.
exec sqsqlite serve "$@"
