# The two commands a fresh machine needs: `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
JDBC_JAR ?= /usr/share/java/sqlite-jdbc.jar

.PHONY: demo test bench jdbc

$(VENV)/.base: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev: $(VENV)/.base
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

# The SQLite JDBC driver for the Spark report (Debian's package), installed where missing.
jdbc:
	@test -f $(JDBC_JAR) || { \
	  command -v apt-get >/dev/null || { echo "install the SQLite JDBC driver at $(JDBC_JAR)"; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libxerial-sqlite-jdbc-java >/dev/null; }

demo: $(VENV)/.base
	$(BIN)/sqsqlite demo

test: $(VENV)/.dev jdbc
	$(BIN)/python -m pytest -q

bench: $(VENV)/.dev
	$(BIN)/python -m benchmarks
