#!/bin/sh
# The image's virtual environment ($1) cut to what `sqsqlite serve` and the console run, in the
# Dockerfile's build stage (docs/howto/emulator.md has the figures): shared objects stripped of their
# symbols (uvloop's alone is 13 MB with them, 1.6 MB without), no Cython sources, C headers,
# type stubs or test helpers, and bytecode only for the modules a start imports (warm.py), so
# that a start compiles nothing and the rest costs no space twice.
set -eu
venv=$1
site=$(echo "$venv"/lib/python3*/site-packages)
if ! command -v strip >/dev/null; then  # binutils: a public Python image has apt to get it
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils >/dev/null
fi
find "$site" -name '*.so' -exec strip --strip-unneeded {} +
find "$site" \( -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi' -o -name '*.c' -o -name '*.h' -o -name '*.pyi' \) -delete
rm -rf "$site/sqlalchemy/testing" "$site/alembic/testing" "$site/_distutils_hack" "$site/distutils-precedence.pth"
find "$site" -name __pycache__ -prune -exec rm -rf {} +
"$venv/bin/python" "$(dirname "$0")/warm.py"
