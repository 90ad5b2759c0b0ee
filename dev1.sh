#!/bin/bash
export PYTHONPATH=.
SIDE_MODE=ctx timeout 100 python -m benchmarks.probes.stream_side 2>&1 | tail -8
