# pause.sh, sourced by the side-by-side scripts: pause stops the processes matching
# $PAUSE_PATTERN (a pgrep -f pattern; a background job that must not run while timing) with
# SIGSTOP, resume sends them SIGCONT. The sourcing script calls resume from its EXIT trap, so
# they run again on any exit or interrupt.
paused=""
resume() {
	if [ -n "$paused" ]; then kill -CONT $paused 2>/dev/null || true; fi
	paused=""
}
pause() {
	paused=$(pgrep -f -- "$PAUSE_PATTERN" | grep -vx "$$" || true)
	if [ -n "$paused" ]; then kill -STOP $paused 2>/dev/null || true; fi
}
