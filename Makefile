# The two commands a fresh machine needs: `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
JDBC_JAR ?= /usr/share/java/sqlite-jdbc.jar
CHROMIUM ?= $(or $(SQSQLITE_CHROMIUM),/usr/bin/chromium)

.PHONY: demo test test-container bench sql jdbc chromium jssdk podman

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

# Lint, format check and type check first (seconds), then the suite.
test: $(VENV)/.dev jdbc chromium jssdk
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

# The Dockerfile's image built and run for real with podman (tests/container): about 20 s with the
# Debian base cached in podman's store, a minute more the first time. CI runs it after make test.
test-container: $(VENV)/.dev podman
	SQSQLITE_CONTAINER_TEST=1 $(BIN)/python -m pytest -q -rs -s tests/container

bench: $(VENV)/.dev
	$(BIN)/python -m benchmarks

# sqsqlite/queries.sql and the names of sqsqlite/queries.py, written anew from statements.py
# (commit both; tests/unit/test_queries.py fails while they are stale).
sql: $(VENV)/.base
	$(BIN)/python -m sqsqlite.sqlgen
