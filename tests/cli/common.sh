#!/usr/bin/env bash
# Helpers the command-line tests share (sourced).

# Two solver results are the same when they agree in everything but the run's duration and outputs.
same_result() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b):
    d.pop("seconds", None), d.pop("output", None)
sys.exit(a != b)
PY
}
