#!/usr/bin/env bash
# What the test suite needs beside npm packages: OpenZiti's C SDK from PyPI (test/fabric/csdk.test.ts).
# Installed once; a machine that already has it goes on at once.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import openziti, sys; sys.exit(0 if openziti.__version__.startswith("0.6.0") else 1)' 2>/dev/null && exit 0
echo "installing the C SDK for the tests (pip: test/peers/requirements.txt)"
python3 -m pip install --quiet --disable-pip-version-check -r test/peers/requirements.txt 2>&1 | grep -v -i 'running pip as the .root. user' || true
python3 -c 'import openziti' || { echo "could not install openziti from PyPI: the C SDK test needs it (python3 -m pip install -r test/peers/requirements.txt)"; exit 1; }
