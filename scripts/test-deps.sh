#!/usr/bin/env bash
# What the test suite needs beside npm packages, from PyPI: OpenZiti's C SDK (test/fabric/csdk.test.ts),
# schemathesis (test/api/schemathesis.test.ts) and Prometheus's Python client, whose text-format parser
# reads /metrics (test/api/metrics-health.test.ts).
# Installed once; a machine that already has it goes on at once.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import openziti, schemathesis, prometheus_client.parser, sys; sys.exit(0 if openziti.__version__.startswith("0.6.0") and schemathesis.__version__ == "4.32.5" else 1)' 2>/dev/null && exit 0
echo "installing the C SDK, schemathesis and the Prometheus parser for the tests (pip: test/peers/requirements.txt)"
python3 -m pip install --quiet --disable-pip-version-check -r test/peers/requirements.txt 2>&1 | grep -v -i 'running pip as the .root. user' || true
python3 -c 'import openziti' || { echo "could not install openziti from PyPI: the C SDK test needs it (python3 -m pip install -r test/peers/requirements.txt)"; exit 1; }
python3 -c 'import schemathesis' || { echo "could not install schemathesis from PyPI: test/api/schemathesis.test.ts needs it (python3 -m pip install -r test/peers/requirements.txt)"; exit 1; }
python3 -c 'import prometheus_client.parser' || { echo "could not install prometheus_client from PyPI: the metrics test needs it (python3 -m pip install -r test/peers/requirements.txt)"; exit 1; }
