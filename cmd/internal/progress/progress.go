// Package progress draws a one-line progress bar for long-running work
// such as training or benchmarks, in the spirit of Python's tqdm:
//
//	train  [#######.............]  37% 370/1000  12.3 it/s  ETA 51s  loss 2.31
//
// On a terminal the line is redrawn in place with '\r'. When output goes
// to a file or pipe, '\r' would leave every redraw in the log, so a plain
// line is written only at each tenth of the work instead, and at least every
// five minutes while work advances (a grid of many hours would otherwise log
// once an hour or more).
//
// Why not a library: the two maintained ones the module proxy serves were tried against what
// this package must do, writing 1000 updates to a bytes.Buffer (a log file, not a terminal).
// github.com/schollz/progressbar/v3 (v3.19.1) has the bar, rate, ETA and a status text
// (OptionShowDescriptionAtLineEnd), but it has no mode for a file: unthrottled, it wrote 5998 '\r' and no
// '\n', 396 KB on one line of the log, and it has no tenths or five-minute lines.
// github.com/vbauerster/mpb/v8 (v8.16.2) draws several bars, with rate and ETA decorators,
// but it refreshes only a terminal: to a file it wrote nothing at all, and a log line per tenth
// would need its ConsoleWriter reimplemented plus the logic below, about as much code as this
// package. Training logs (cmd/train redirected, bench --full's log per run, each its own bar
// beside the one on stderr) are files, so neither serves; a library would replace only the
// terminal redraw, about twenty lines here.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

const (
	barWidth = 20
	// redrawEvery limits terminal redraws: faster is unreadable and, for
	// tight loops, costs more than the work being measured.
	redrawEvery = 200 * time.Millisecond
	// logEvery is the longest a non-terminal log goes without a line while work advances.
	logEvery = 5 * time.Minute
)

// Bar is a progress bar. It is safe for use from several goroutines.
type Bar struct {
	mu    sync.Mutex
	w     io.Writer
	what  string
	total int
	tty   bool
	now   func() time.Time // Replaced by tests with a fake clock.
	start time.Time

	done   int
	status string

	lastDraw   time.Time // Terminal: when the line was last redrawn.
	lastWidth  int       // Terminal: length of the last line, to blank leftovers.
	lastDecile int       // Non-terminal: tenth of the work last logged, -1 if none.
	lastDone   int       // Non-terminal: done at the last logged line, -1 if none.
	lastLog    time.Time // Non-terminal: when the last line was logged.
}

// New starts a bar for total units of work written to w (os.Stderr
// typically), labelled with what. A total <= 0 means the amount of work is
// unknown, and the bar shows only the count and rate.
func New(w io.Writer, what string, total int) *Bar {
	return newBar(w, what, total, time.Now)
}

func newBar(w io.Writer, what string, total int, now func() time.Time) *Bar {
	return &Bar{
		w:          w,
		what:       what,
		total:      total,
		tty:        isTerminal(w),
		now:        now,
		start:      now(),
		lastDecile: -1,
		lastDone:   -1,
	}
}

// isTerminal reports whether w is a character device such as a terminal,
// as opposed to a regular file or a pipe.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Set records that done units are complete and sets free-form status text
// (e.g. "loss 2.31 · 5.2k tok/s"). It redraws at most every 200ms, and
// always on the last unit so the final state is never lost.
func (b *Bar) Set(done int, status string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done, b.status = done, status
	now := b.now()
	last := b.total > 0 && done >= b.total

	if b.tty {
		if last || now.Sub(b.lastDraw) >= redrawEvery {
			b.redraw(now)
		}
		return
	}
	if d := b.decile(); d > b.lastDecile || (last && b.lastDone != done) ||
		(done != b.lastDone && now.Sub(b.lastLog) >= logEvery) {
		b.logLine(now)
	}
}

// Finish draws the final state and ends the line, so whatever is printed
// next starts on a fresh line.
func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if b.tty {
		b.redraw(now)
		fmt.Fprintln(b.w)
		return
	}
	if b.lastDone != b.done {
		b.logLine(now)
	}
}

// decile returns which tenth of the work is complete (0..10). With an
// unknown total there are no tenths, so only the first line is logged
// until Finish.
func (b *Bar) decile() int {
	if b.total <= 0 {
		return 0
	}
	return min(10*b.done/b.total, 10)
}

// redraw rewrites the terminal line in place. Padding with spaces erases
// the tail of a previous, longer line without relying on escape codes.
func (b *Bar) redraw(now time.Time) {
	line := b.render(now)
	pad := max(b.lastWidth-len(line), 0)
	fmt.Fprint(b.w, "\r"+line+strings.Repeat(" ", pad))
	b.lastWidth = len(line)
	b.lastDraw = now
}

func (b *Bar) logLine(now time.Time) {
	fmt.Fprintln(b.w, b.render(now))
	b.lastDecile = b.decile()
	b.lastDone = b.done
	b.lastLog = now
}

// render formats the bar for the current state as of now.
func (b *Bar) render(now time.Time) string {
	var sb strings.Builder
	sb.WriteString(b.what)

	if b.total > 0 {
		frac := min(max(float64(b.done)/float64(b.total), 0), 1)
		filled := int(frac * barWidth)
		fmt.Fprintf(&sb, "  [%s%s] %3d%% %d/%d",
			strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled),
			int(frac*100), b.done, b.total)
	} else {
		fmt.Fprintf(&sb, "  %d", b.done)
	}

	// The rate is an average since New rather than a moving window: simple
	// and stable, at the cost of reacting slowly to changes in speed.
	elapsed := now.Sub(b.start).Seconds()
	var rate float64
	if elapsed > 0 && b.done > 0 {
		rate = float64(b.done) / elapsed
	}
	sb.WriteString("  " + formatRate(rate) + " it/s")

	if b.total > 0 {
		eta := "?"
		if rate > 0 {
			left := max(b.total-b.done, 0)
			eta = formatDuration(time.Duration(float64(left) / rate * float64(time.Second)))
		}
		sb.WriteString("  ETA " + eta)
	}

	if b.status != "" {
		sb.WriteString("  " + b.status)
	}
	return sb.String()
}

// formatRate keeps the rate to a few characters so the line does not
// jump around as the rate grows.
func formatRate(r float64) string {
	if r >= 1000 {
		return fmt.Sprintf("%.1fk", r/1000)
	}
	return fmt.Sprintf("%.1f", r)
}

// formatDuration prints whole seconds as 42s, 1m02s or 3h04m05s.
func formatDuration(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	h, m, s := s/3600, s/60%60, s%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	default:
		return fmt.Sprintf("%ds", s)
	}
}
