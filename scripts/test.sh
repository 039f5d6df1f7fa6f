#!/usr/bin/env bash
# Set up a virtualenv with mqtool and its test dependencies, then run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# The report's browser tests (tests/browser) drive Debian's Chromium through Playwright, which never
# downloads a browser: install it when absent and apt-get can (they skip without it, fail under CI).
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if [ -z "$SUDO" ] || command -v sudo >/dev/null 2>&1; then
    echo "test.sh: installing Debian's chromium for the browser tests" >&2
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium fonts-dejavu-core >/dev/null \
      || echo "test.sh: could not install chromium; the browser tests will skip" >&2
  fi
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test,spark]'
# -n auto: one pytest-xdist worker per core (the suite takes ~27 min on one core of a 2-core machine)
.venv/bin/python -m pytest -q -n auto "$@"
