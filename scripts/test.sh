#!/usr/bin/env bash
# Set up a virtualenv with mqtool and its test dependencies, then run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test,spark]'
.venv/bin/python -m pytest -q "$@"
