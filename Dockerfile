# sqsqlite serve as a container: the SQS endpoint on 9324, the web console at /console, the
# database on the /data volume, queues from a mounted file, LocalStack's init scripts from
# /etc/localstack/init/ready.d (awslocal on PATH). docs/howto/emulator.md has the settings.
#
#   docker build -t sqsqlite .                       # from the public python:3.12-slim image
#   podman build --format docker --build-arg BASE=localhost/debian-python3 \
#       --build-arg BUILD_BASE=localhost/debian-python3-venv -t sqsqlite .
#
# BASE: the image the result is made on, any Debian-like image with python3 (3.10+).
# BUILD_BASE: the image the virtual environment is built in: the same python3 with its venv module
# (and binutils' strip, or apt to install it); BASE unless given. A base of its own keeps pip,
# ensurepip's wheels and binutils out of the result. The same file builds from a public Python
# image or from local bases where public registries can't be reached.
# PIP_CERT: a CA bundle mounted at build time for pip (a proxy's), e.g.
#   podman build -v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro --build-arg PIP_CERT=/run/host-ca.crt ...
ARG BASE=python:3.12-slim-bookworm
ARG BUILD_BASE=${BASE}

FROM ${BUILD_BASE} AS build
ARG PIP_CERT=
COPY pyproject.toml README.md /src/
COPY sqsqlite /src/sqsqlite
COPY cli /src/cli
COPY migrations /src/migrations
COPY container/slim.sh container/warm.py /src/container/
# The server extra's uvicorn[standard] also brings watchfiles (--reload), websockets and dotenv
# (--env-file), which serve never uses: uninstalled with pip, setuptools and what they need alone.
RUN python3 -m venv /opt/sqsqlite \
 && /opt/sqsqlite/bin/pip install --no-cache-dir --no-compile --disable-pip-version-check ${PIP_CERT:+--cert "$PIP_CERT"} \
        "/src[server,console,elasticmq]" \
 && /opt/sqsqlite/bin/pip uninstall -q -y watchfiles anyio idna sniffio websockets python-dotenv setuptools \
 && /opt/sqsqlite/bin/python -m pip uninstall -q -y pip \
 && sh /src/container/slim.sh /opt/sqsqlite

FROM ${BASE}
COPY --from=build /opt/sqsqlite /opt/sqsqlite
COPY container/entrypoint.sh /usr/local/bin/sqsqlite-entrypoint
# A user of its own (no login, no home but the data), owning the volume's directory: written into
# /etc/passwd and /etc/group directly, so that the base needs no useradd.
RUN echo 'sqsqlite:x:10001:10001:sqsqlite:/data:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'sqsqlite:x:10001:' >> /etc/group \
 && mkdir -p /data /etc/sqsqlite /etc/localstack/init/boot.d /etc/localstack/init/ready.d \
 && chown 10001:10001 /data \
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
# /health answers 503 while the database is migrated and the queues file applied, 200 once
# serving (503 again when the database can't be read). Python's own urllib: the image needs no curl.
HEALTHCHECK --interval=2s --timeout=2s --start-period=30s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('SQSQLITE_PORT', '9324') + '/health', timeout=2)"]
# The entrypoint execs sqsqlite serve, which runs as PID 1 and stops cleanly on SIGTERM.
STOPSIGNAL SIGTERM
ENTRYPOINT ["sqsqlite-entrypoint"]
