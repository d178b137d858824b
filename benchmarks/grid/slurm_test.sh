#!/bin/sh
# slurm_test.sh runs the grid on a real Slurm: a one-node cluster of 2 CPUs started on this
# machine (its own munged, slurmctld and slurmd, its configuration and state in a temporary
# folder, its ports on 127.0.0.1), a small grid of the tiny recipe (4 cells, one of them a
# fine-tune that starts from another) submitted with `bench --full --slurm --submit`. It checks
# that every cell's results and the report are there and equal a local run of the same cells
# (-jobs 2), that a cell whose array task is cancelled midway (scancel) is listed by -plan and
# completed by running the same submit command again, and prints both runs' wall times. It
# stops the daemons it started and removes its folder.
#
#	sudo benchmarks/grid/slurm_test.sh        # or POSFORMER_SLURM_TEST=1 go test -run Slurm ./benchmarks/grid/
#
# It needs root (the daemons run as SlurmUser root) and installs Debian's slurm-wlm and munge
# when they are absent.
set -eu
cd "$(dirname "$0")/../.."
REPO=$(pwd)

if [ "$(id -u)" != 0 ]; then
	echo "slurm_test.sh: run as root (the test's Slurm runs as SlurmUser root)" >&2
	exit 2
fi
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
	# Exit 77 (the test skips) when they cannot be installed: no package mirror is no failure of
	# the grid's.
	if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; }; then
		echo "slurm_test.sh: cannot install slurm-wlm and munge with apt-get; skipped" >&2
		exit 77
	fi
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/posformer-slurm.XXXXXX")
PIDS=""
cleanup() {
	# Only the daemons this script started, by their pid files.
	for f in "$T/slurmd.pid" "$T/slurmctld.pid" "$T/munge/munged.pid"; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
	done
	sleep 1
	rm -rf "$T"
}
trap cleanup EXIT INT TERM

# munge: a key of its own, a socket in the folder.
mkdir -p "$T/munge"
chmod 700 "$T/munge"
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$T/munge/munge.key"
munged --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.socket" \
	--pid-file="$T/munge/munged.pid" --log-file="$T/munge/munged.log" --seed-file="$T/munge/munged.seed"

# Ports of their own, so that a Slurm already on the machine is left alone.
base=$((20000 + $$ % 20000))
HOST=$(hostname -s)
mkdir -p "$T/state" "$T/spool"
cat > "$T/slurm.conf" <<EOF
ClusterName=posformertest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
KillWait=10
MinJobAge=300
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=2 RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$T/slurm.conf"
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF" -N "$HOST"
for _ in $(seq 60); do
	sinfo -h -o %T 2>/dev/null | grep -q idle && break
	sleep 1
done
sinfo -h -o %T | grep -q idle || { echo "slurm_test.sh: the node did not come up:" >&2; tail -20 "$T/slurmctld.log" "$T/slurmd.log" >&2; exit 1; }
echo "slurm_test.sh: one-node Slurm up ($(sinfo -h -o '%N %c CPUs %T'))"

go build -o "$T/bench" ./cmd/bench
GRID="--full --recipe tiny -task copy -scheme rope,alibi -seeds 1"

# wait_idle waits until the queue is empty.
wait_idle() {
	for _ in $(seq 600); do
		[ -z "$(squeue -h)" ] && return 0
		sleep 1
	done
	echo "slurm_test.sh: the queue did not empty in 10 minutes" >&2
	squeue >&2
	exit 1
}

# The same cells, locally, two at a time on this machine's two cores: one core each, as each
# Slurm task has (--cpus-per-task 1), so that both runs compute the same numbers.
ms() { echo $(($(date +%s%N) / 1000000)); }
start=$(ms)
"$T/bench" $GRID -o "$T/local" -weights "$T/local-w" -jobs 2 2>"$T/local.log"
local_ms=$(($(ms) - start))

# On Slurm: one array of the three cells that need nothing, one of the fine-tune, the report.
start=$(ms)
"$T/bench" $GRID -o "$T/out" -weights "$T/w" --slurm --submit --cpus-per-task 1 --mem 500M --time 10:00 --array-limit 2 | tee "$T/submit.log"
wait_idle
slurm_ms=$(($(ms) - start))

fail=0
check() { # check WHAT COMMAND...: runs the command, reports
	what=$1
	shift
	if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}
for f in "$T"/local/results/cells/copy/*.csv; do
	check "cell $(basename "$f" .csv): the same rows as the local run" cmp -s "$f" "$T/out/results/cells/copy/$(basename "$f")"
done
check "4 cells' results" test "$(ls "$T"/out/results/cells/copy/*.csv | wc -l)" = 4
check "the report's copy.csv equals the local run's" cmp -s "$T/local/results/copy.csv" "$T/out/results/copy.csv"
check "the report (RESULTS.md)" test -s "$T/out/RESULTS.md"
check "two levels: the fine-tune's array after the others'" grep -q "level 1: job" "$T/submit.log"
check "-plan: every cell done" sh -c "\"$T/bench\" $GRID -o \"$T/out\" -weights \"$T/w\" -plan | grep -c '  done' | grep -qx 4"

# An array task cancelled midway: longer cells (-steps 3000), cell 0 (copy/rope) cancelled once
# its training has saved a checkpoint.
KILL="$GRID -steps 3000 -o $T/kill -weights $T/kill-w"
SUBMIT="$T/bench $KILL --slurm --submit --cpus-per-task 1 --mem 500M --time 10:00"
$SUBMIT | tee "$T/kill-submit.log"
job=$(sed -n 's/^level 0: job \([0-9]*\).*/\1/p' "$T/kill-submit.log")
for _ in $(seq 300); do
	[ -f "$T/kill-w/copy/rope/train_state.safetensors" ] && break
	sleep 0.2
done
sleep 1
scancel "${job}_0"
echo "slurm_test.sh: cancelled array task ${job}_0 (cell 0, copy/rope) at step $(tail -1 "$T/kill-w/copy/rope/loss.csv" | cut -d, -f1)"
wait_idle
"$T/bench" $KILL -plan | sed -n '/^0 /,/^3 /p' | tee "$T/kill-plan.txt"
check "-plan: the cancelled cell is not done" sh -c "! grep -q '^0 .*  done' \"$T/kill-plan.txt\""
check "-plan: its fine-tune waits on it" grep -q "^1 .*waiting on copy/rope" "$T/kill-plan.txt"
check "the fine-tune's task failed with one line naming it" sh -c "cat \"$T\"/kill/cluster/slurm/logs/*_1.out | grep -q 'starts from copy/rope, which is not done; run that cell first (--cell 0)'"
$SUBMIT 2>&1 | tee "$T/kill-submit2.log"
wait_idle
check "the same command again: the 2 cells not done resubmitted" grep -q "2 cells to run in 2 dependency levels" "$T/kill-submit2.log"
check "the cancelled cell resumed from its checkpoint" sh -c "cat \"$T\"/kill/cluster/slurm/logs/*.out | grep -q 'cell 0 was begun.*resuming'"
check "-plan: every cell done after the second submission" sh -c "\"$T/bench\" $KILL -plan | grep -c '  done' | grep -qx 4"
check "the report after the second submission" test -s "$T/kill/RESULTS.md"

# Two processes given the same cell at once: one runs it, the other says who holds it.
TWICE="$GRID -steps 3000 -o $T/twice -weights $T/twice-w --cell 0 --cores 1"
"$T/bench" $TWICE >"$T/twice-a.log" 2>&1 &
a=$!
sleep 1
"$T/bench" $TWICE >"$T/twice-b.log" 2>&1
wait $a
check "a second process on a running cell is a no-op naming the holder" grep -q "held by another process (pid $a on" "$T/twice-b.log"

echo "slurm_test.sh: 4 cells, local (-jobs 2): $local_ms ms; Slurm (one node, 2 CPUs, two levels and the report): $slurm_ms ms"
if [ "$fail" != 0 ]; then
	echo "slurm_test.sh: FAILED; the daemons' logs:" >&2
	tail -30 "$T/slurmctld.log" >&2
	ls "$T"/out/cluster/slurm/logs/ >&2 && tail -n 5 "$T"/out/cluster/slurm/logs/* "$T"/kill/cluster/slurm/logs/* >&2
	exit 1
fi
echo "slurm_test.sh: PASS"
