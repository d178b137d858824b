package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when the test says so.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestBar(w *bytes.Buffer, what string, total int, tty bool) (*Bar, *fakeClock) {
	clock := &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := newBar(w, what, total, clock.now)
	b.tty = tty
	return b, clock
}

func TestRender(t *testing.T) {
	var buf bytes.Buffer
	b, clock := newTestBar(&buf, "train", 1000, false)

	if got, want := b.render(clock.now()), "train  [....................]   0% 0/1000  0.0 it/s  ETA ?"; got != want {
		t.Errorf("initial:\n got %q\nwant %q", got, want)
	}

	clock.advance(30 * time.Second)
	b.done, b.status = 370, "loss 2.31"
	// 370 units in 30s is 12.33/s; 630 left takes 51.08s.
	want := "train  [#######.............]  37% 370/1000  12.3 it/s  ETA 51s  loss 2.31"
	if got := b.render(clock.now()); got != want {
		t.Errorf("midway:\n got %q\nwant %q", got, want)
	}

	b.done = 100
	b.status = ""
	// 100 units in 30s leaves 900 units at 3.33/s: 4m30s.
	want = "train  [##..................]  10% 100/1000  3.3 it/s  ETA 4m30s"
	if got := b.render(clock.now()); got != want {
		t.Errorf("slow:\n got %q\nwant %q", got, want)
	}
}

func TestRenderLarge(t *testing.T) {
	var buf bytes.Buffer
	b, clock := newTestBar(&buf, "tok", 10_000_000, false)
	clock.advance(2 * time.Second)
	b.done = 5200
	// 2600/s; 9,994,800 left takes 3844.15s = 1h04m04s.
	want := "tok  [....................]   0% 5200/10000000  2.6k it/s  ETA 1h04m04s"
	if got := b.render(clock.now()); got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}

	b.done = b.total
	if got := b.render(clock.now()); !strings.Contains(got, "[####################] 100%") || !strings.Contains(got, "ETA 0s") {
		t.Errorf("complete bar: %q", got)
	}
}

func TestRenderUnknownTotal(t *testing.T) {
	var buf bytes.Buffer
	b, clock := newTestBar(&buf, "eval", 0, false)
	clock.advance(4 * time.Second)
	b.done = 10
	if got, want := b.render(clock.now()), "eval  10  2.5 it/s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                           "0s",
		59 * time.Second:            "59s",
		62 * time.Second:            "1m02s",
		time.Hour + 2*time.Second:   "1h00m02s",
		1500 * time.Millisecond:     "2s",
		26*time.Hour + time.Minute:  "26h01m00s",
		999 * time.Millisecond / 10: "0s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestNonTerminalLogsFewLines(t *testing.T) {
	var buf bytes.Buffer
	b, clock := newTestBar(&buf, "work", 1000, false)
	for i := 1; i <= 1000; i++ {
		clock.advance(time.Millisecond)
		b.Set(i, "")
	}
	b.Finish()
	out := buf.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// The first update, then one line per tenth: 10%, 20%, ..., 100%.
	if len(lines) != 11 {
		t.Errorf("got %d lines, want 11:\n%s", len(lines), out)
	}
	if strings.Contains(out, "\r") {
		t.Error("non-terminal output contains '\\r'")
	}
	if !strings.HasPrefix(lines[len(lines)-1], "work  [####################] 100% 1000/1000") {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
}

// Slow work logs at least every five minutes while it advances, besides each tenth.
func TestNonTerminalLogsSlowWork(t *testing.T) {
	var buf bytes.Buffer
	b, clock := newTestBar(&buf, "grid", 1000, false)
	for i := 1; i <= 60; i++ { // an hour, one unit a minute: 6% of the work
		clock.advance(time.Minute)
		b.Set(i, "")
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	// The first update, then one every five minutes: 1, 6, 11, ..., 56.
	if len(lines) != 12 {
		t.Errorf("got %d lines in an hour, want 12:\n%s", len(lines), buf.String())
	}
	clock.advance(time.Hour)
	b.Set(60, "") // 56 → 60 since the last line: logged
	clock.advance(time.Hour)
	b.Set(60, "") // no progress: nothing new to log
	if got := strings.Count(buf.String(), "\n"); got != 13 {
		t.Errorf("got %d lines, want 13 (one for 56 → 60, none without progress)", got)
	}
}

func TestTerminalThrottles(t *testing.T) {
	var buf bytes.Buffer
	b, clock := newTestBar(&buf, "work", 1000, true)
	for i := 1; i <= 1000; i++ {
		clock.advance(time.Millisecond) // 1s in all: about 5 redraws.
		b.Set(i, "")
	}
	redraws := strings.Count(buf.String(), "\r")
	if redraws < 2 || redraws > 7 {
		t.Errorf("got %d redraws for 1s of work, want about 5", redraws)
	}
	if strings.Contains(buf.String(), "\n") {
		t.Error("terminal output ended its line before Finish")
	}
	if !strings.Contains(buf.String(), "1000/1000") {
		t.Error("last unit was not drawn")
	}
}

func TestTerminalErasesLongerLine(t *testing.T) {
	var buf bytes.Buffer
	b, clock := newTestBar(&buf, "w", 10, true)
	b.Set(1, "a long status message")
	long := buf.Len()
	clock.advance(time.Second)
	buf.Reset()
	b.Set(2, "short")
	got := buf.String()
	if len(got) != long || !strings.HasSuffix(strings.TrimRight(got, " "), "short") {
		t.Errorf("leftover text of a %d-byte line not blanked: %q", long, got)
	}
}

func TestFinishAddsNewline(t *testing.T) {
	for _, tty := range []bool{true, false} {
		var buf bytes.Buffer
		b, clock := newTestBar(&buf, "work", 100, tty)
		clock.advance(time.Second)
		b.Set(50, "")
		b.Set(55, "") // Too soon (tty) or same tenth (log): not drawn yet.
		b.Finish()
		out := buf.String()
		if !strings.HasSuffix(out, "\n") {
			t.Errorf("tty=%v: output does not end in a newline: %q", tty, out)
		}
		if !strings.Contains(out, "55/100") {
			t.Errorf("tty=%v: Finish did not draw the final state: %q", tty, out)
		}
		if strings.Count(out, "\n") != map[bool]int{true: 1, false: 2}[tty] {
			t.Errorf("tty=%v: unexpected line count in %q", tty, out)
		}
	}
}

func TestNewDetectsNonTerminal(t *testing.T) {
	if New(&bytes.Buffer{}, "x", 1).tty {
		t.Error("bytes.Buffer detected as a terminal")
	}
}
