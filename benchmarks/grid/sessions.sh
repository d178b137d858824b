#!/bin/sh
# sessions.sh runs the v2 grid on a machine that goes away at a known time (a work session):
#
#	END=17:00 nohup benchmarks/grid/sessions.sh > grid.log 2>&1 &
#
# It builds cmd/bench and runs the whole grid in one command, in grid.Order's order: the cells
# an earlier run stopped mid-way, then every seed of the schemes that RESULTS.md's "against the
# papers" compares (report.Compared), then the rest seed by seed (mlm's first seed, then every
# task's second, then third). The command
# skips the finished cells (their results are in benchmarks/v2, committed) and starts no cell
# that its estimate says would end after END (leave time to commit before the machine goes):
# near the end it takes the small cells that still fit. Checkpoints go to $WEIGHTS (default
# weights/grid, ignored by git); the shipped ones to weights/bench-v2.
set -e
cd "$(dirname "$0")/../.."
END=$(date -d "${END:?set END to when the grid must stop starting cells, e.g. END=17:00}" +%s)
# A time of day already past means tomorrow's (a session that runs over midnight).
[ "$END" -gt "$(date +%s)" ] || END=$((END + 86400))
WEIGHTS=${WEIGHTS:-weights/grid}
go build -o "${TMPDIR:-/tmp}/posformer-grid-bench" ./cmd/bench
left() { s=$((END - $(date +%s))); [ "$s" -gt 0 ] || s=1; echo "${s}s"; }
nice -n 19 "${TMPDIR:-/tmp}/posformer-grid-bench" --full -jobs 2 -weights "$WEIGHTS" -within "$(left)" -task copy,reverse,passkey,mqar,lm,mlm
