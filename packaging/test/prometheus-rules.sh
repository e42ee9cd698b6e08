#!/usr/bin/env bash
# Checks the shipped Prometheus rules with the real engine: promtool parses
# and lints them, then runs their unit tests (nichealth.rules.test.yml,
# which replays the seeds' flap and drop timelines). Debian's `prometheus`
# package provides promtool. Outside CI a missing promtool is reported and
# skipped; under CI=true it fails, so CI cannot pass without having run
# the rules.
set -euo pipefail
cd "$(dirname "$0")/../prometheus"

if ! command -v promtool >/dev/null; then
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: promtool not found; install Debian's prometheus package (apt-get install prometheus)" >&2
    exit 1
  fi
  echo "SKIP: promtool not found, Prometheus rules NOT checked (apt-get install prometheus)" >&2
  exit 0
fi

promtool --version 2>&1 | head -n1
promtool check rules nichealth.rules.yml
promtool test rules nichealth.rules.test.yml
