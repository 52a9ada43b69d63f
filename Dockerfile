# sqsqlite serve as a container: the SQS endpoint on 9324, the web console at /console, the
# database on the /data volume, queues from a mounted file. docs/emulator.md has the settings.
#
#   docker build -t sqsqlite .                       # from the public python:3.12-slim image
#   podman build --format docker --build-arg BASE=localhost/debian-python3 -t sqsqlite .
#
# BASE: any Debian-like image with python3 (3.10+) and its venv module: the same file builds
# from a public Python image or from a local base where public registries can't be reached.
# PIP_CERT: a CA bundle mounted at build time for pip (a proxy's), e.g.
#   podman build -v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro --build-arg PIP_CERT=/run/host-ca.crt ...
ARG BASE=python:3.12-slim-bookworm

FROM ${BASE} AS build
ARG PIP_CERT=
COPY pyproject.toml README.md /src/
COPY sqsqlite /src/sqsqlite
COPY cli /src/cli
COPY migrations /src/migrations
RUN python3 -m venv /opt/sqsqlite \
 && /opt/sqsqlite/bin/pip install --no-cache-dir --disable-pip-version-check ${PIP_CERT:+--cert "$PIP_CERT"} \
        "/src[server,console,elasticmq]" \
 && /opt/sqsqlite/bin/pip uninstall -q -y pip setuptools \
 && rm -rf /opt/sqsqlite/lib/python3*/site-packages/_distutils_hack /opt/sqsqlite/lib/python3*/site-packages/distutils-precedence.pth

FROM ${BASE}
COPY --from=build /opt/sqsqlite /opt/sqsqlite
COPY container/entrypoint.sh /usr/local/bin/sqsqlite-entrypoint
# A user of its own (no login, no home but the data), owning the volume's directory.
RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home --shell /usr/sbin/nologin sqsqlite \
 && mkdir -p /data /etc/sqsqlite \
 && chown sqsqlite:sqsqlite /data \
 && chmod 0755 /usr/local/bin/sqsqlite-entrypoint
ENV PATH=/opt/sqsqlite/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SQSQLITE_DB=/data/sqsqlite.db \
    SQSQLITE_HOST=0.0.0.0 \
    SQSQLITE_PORT=9324
USER sqsqlite
WORKDIR /data
VOLUME ["/data"]
EXPOSE 9324
# /health answers 200 once migrations and the queues file are applied (503 before, or when the
# database can't be read). Python's own urllib: the image needs no curl.
HEALTHCHECK --interval=2s --timeout=2s --start-period=30s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('SQSQLITE_PORT', '9324') + '/health', timeout=2)"]
# The entrypoint execs sqsqlite serve, which runs as PID 1 and stops cleanly on SIGTERM.
STOPSIGNAL SIGTERM
ENTRYPOINT ["sqsqlite-entrypoint"]
