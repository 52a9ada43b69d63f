# The two commands a fresh machine needs: `make demo` and `make test` (which runs `make lint` first).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
JDBC_JAR ?= /usr/share/java/sqlite-jdbc.jar
CHROMIUM ?= $(or $(SQSQLITE_CHROMIUM),/usr/bin/chromium)

.PHONY: demo lint test test-pythons test-sqlite test-container bench sql jdbc chromium jssdk podman

$(VENV)/.base: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev: $(VENV)/.base
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# The SQLite JDBC driver the Spark report reads the database with (Debian's package), installed
# where missing and possible; elsewhere one line says what to install, and the report's tests
# that need it are skipped while every other test runs.
jdbc:
	@test -f $(JDBC_JAR) || { \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's libxerial-sqlite-jdbc-java: the SQLite JDBC driver ($(JDBC_JAR)) for the Spark report's tests"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libxerial-sqlite-jdbc-java >/dev/null; } \
	      || echo "could not install it: the Spark report's tests will be skipped"; \
	  else \
	    echo "no SQLite JDBC driver at $(JDBC_JAR): install it (Debian: apt-get install libxerial-sqlite-jdbc-java) or set SQSQLITE_JDBC_JAR; until then the Spark report's tests are skipped"; \
	  fi; }

# Debian's chromium, which the web console's browser tests drive with Playwright (Playwright never
# downloads a browser here), installed where missing and possible; elsewhere one line says what to
# install, and those tests are skipped while every other test runs.
chromium:
	@test -x $(CHROMIUM) || { \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium ($(CHROMIUM)) for the web console's browser tests"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	      || echo "could not install it: the console's browser tests will be skipped"; \
	  else \
	    echo "no chromium at $(CHROMIUM): install it (Debian: apt-get install chromium) or set SQSQLITE_CHROMIUM; until then the console's browser tests are skipped"; \
	  fi; }

# The AWS SDK for JavaScript v3, which tests/server/test_js_sdk.py runs against the endpoint,
# installed from the npm registry into tests/server/js where Node.js and npm are present;
# elsewhere, or when npm can't reach the registry, one line says so and that test is skipped.
JS_SDK := tests/server/js/node_modules/@aws-sdk/client-sqs
jssdk:
	@test -d $(JS_SDK) || { \
	  if command -v node >/dev/null && command -v npm >/dev/null; then \
	    echo "installing @aws-sdk/client-sqs into tests/server/js for the JavaScript SDK's test"; \
	    npm install --prefix tests/server/js --no-audit --no-fund --no-package-lock --silent --fetch-timeout=60000 --fetch-retries=1 \
	      || echo "could not install it: the JavaScript SDK's test will be skipped"; \
	  else \
	    echo "no Node.js and npm: the JavaScript SDK's test is skipped (install them, then npm install --prefix tests/server/js)"; \
	  fi; }

# Debian's podman, runc and mmdebstrap, which the container test builds and runs the image with,
# installed where missing and possible; elsewhere one line says what to install, and that test is
# skipped with the reason.
podman:
	@command -v podman >/dev/null && command -v runc >/dev/null && command -v mmdebstrap >/dev/null || { \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's podman, runc and mmdebstrap for the container test"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc mmdebstrap >/dev/null; } \
	      || echo "could not install them: the container test will be skipped"; \
	  else \
	    echo "no podman, runc and mmdebstrap: install them (Debian: apt-get install podman runc mmdebstrap); until then the container test is skipped"; \
	  fi; }

demo: $(VENV)/.base
	$(BIN)/sqsqlite demo

# Lint, format check, type check and the layers' contracts: seconds, no test run.
lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The whole suite, after lint (a lint failure stops it before the tests' minutes). Every suite
# runs through tests/checked_run.py: red unless every collected test ran to its end and passed
# (a process ended early, even with status 0, is red).
test: lint jdbc chromium jssdk
	$(BIN)/python tests/checked_run.py -q

# Every other supported Python, each in its own venv (.venv-3.10, ...) from pyenv, runs a smaller
# suite: the engine's unit tests, the project's checks and the docs' examples (make test runs the
# whole suite on $(PY)). A version pyenv lacks is skipped with one line saying so.
PYENV_ROOT ?= $(HOME)/.pyenv
PYTHONS ?= 3.10 3.12 3.13
PYTHONS_SUITE ?= tests/unit tests/project tests/docs
# The endpoints' hostile-client benchmark starts two servers and a minute of traffic; it tests
# no difference between Pythons, and make test runs it.
PYTHONS_PYTEST ?= -q -p no:cacheprovider -k 'not hostile_client_benchmark'
# What that suite needs: the extras its tests use and the benchmarks' two SQLite peers, without
# dev's Spark, browsers and servers (pins as pyproject's dev extra has them).
PYTHONS_DEPS ?= pytest hypothesis 'tomli>=2.0; python_version < "3.11"' import-linter 'moto[server]' aiobotocore awscli \
  persist-queue 'litequeue>=0.9,<0.13'
test-pythons:
	@for v in $(PYTHONS); do \
	  py=$$(ls -d $(PYENV_ROOT)/versions/$$v.*/bin/python 2>/dev/null | sort -V | tail -n 1); \
	  if [ -z "$$py" ]; then echo "test-pythons: no Python $$v under $(PYENV_ROOT)/versions: skipped (pyenv install $$v)"; continue; fi; \
	  echo "test-pythons: $$($$py -V) on $(PYTHONS_SUITE)"; \
	  $(MAKE) --no-print-directory PY=$$py .venv-$$v/.pythons || exit 1; \
	  .venv-$$v/bin/python tests/checked_run.py $(PYTHONS_PYTEST) $(PYTHONS_SUITE) || exit 1; \
	done

# The unit tests again on a newer SQLite than Debian's 3.40 (pysqlite3-binary's own, 3.5x, in
# $(PY)'s venv .venv-sqlite): its sitecustomize stands pysqlite3 in for sqlite3 in every process.
# pysqlite3-binary has wheels for Linux alone: elsewhere one line says so and nothing is tested.
test-sqlite:
	@if $(MAKE) --no-print-directory .venv-sqlite/.pythons; then \
	  .venv-sqlite/bin/python -c 'import sqlite3; print("test-sqlite: SQLite", sqlite3.sqlite_version, "from", sqlite3.__file__)' && \
	  .venv-sqlite/bin/python tests/checked_run.py $(PYTHONS_PYTEST) tests/unit; \
	elif [ "$$(uname -s)" = Linux ]; then echo "test-sqlite: could not make .venv-sqlite (above)"; exit 1; \
	else echo "test-sqlite: pysqlite3-binary has wheels for Linux only: skipped"; fi

.venv-sqlite/.pythons: pyproject.toml Makefile
	$(PY) -m venv .venv-sqlite
	.venv-sqlite/bin/pip install -q --upgrade pip
	.venv-sqlite/bin/pip install -q -e '.[aws,server,console,celery,elasticmq]' $(PYTHONS_DEPS) 'pysqlite3-binary>=0.5.4'
	printf '%s\n' 'import sys' 'import pysqlite3' 'sys.modules["sqlite3"] = pysqlite3' 'sys.modules["sqlite3.dbapi2"] = pysqlite3.dbapi2' \
	  > "$$(.venv-sqlite/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/sitecustomize.py"
	touch $@

.venv-%/.pythons: pyproject.toml Makefile
	$(PY) -m venv .venv-$*
	.venv-$*/bin/pip install -q --upgrade pip
	.venv-$*/bin/pip install -q -e '.[aws,server,console,celery,elasticmq]' $(PYTHONS_DEPS)
	touch $@

# The Dockerfile's image built and run for real with podman (tests/container): about 20 s with the
# Debian base cached in podman's store, a minute more the first time. CI runs it after make test.
test-container: $(VENV)/.dev podman
	SQSQLITE_CONTAINER_TEST=1 $(BIN)/python tests/checked_run.py -q -rs -s tests/container

bench: $(VENV)/.dev
	$(BIN)/python -m benchmarks

# sqsqlite/queries.sql and the names of sqsqlite/queries.py, written anew from statements.py
# (commit both; tests/unit/test_queries.py fails while they are stale).
sql: $(VENV)/.base
	$(BIN)/python -m sqsqlite.sqlgen
