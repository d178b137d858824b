package bench

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Each wave of the grid is drawn against its own total: a second wave larger than the first
// never shows more done than its total (one bar for both showed 5015/1180 for hours).
func TestWaveBarCountsEachWaveAgainstItsTotal(t *testing.T) {
	var out bytes.Buffer
	b := &waveBar{w: &out}
	for _, wave := range []struct{ done, total float64 }{{100, 100}, {2500, 5000}, {40, 40}} {
		for f := 0.0; f <= 1; f += 0.25 {
			b.Progress(f*wave.done, wave.total, "cell")
		}
		b.Finish()
	}
	counts := regexp.MustCompile(`(wave \d+) .* (\d+)/(\d+) `)
	seen := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		m := counts.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line without a count: %q", line)
		}
		done, _ := strconv.Atoi(m[2])
		total, _ := strconv.Atoi(m[3])
		if done > total {
			t.Errorf("%q: %d done of %d", line, done, total)
		}
		seen[m[1]] = m[2] + "/" + m[3]
	}
	want := map[string]string{"wave 1": "100/100", "wave 2": "2500/5000", "wave 3": "40/40"}
	for w, c := range want {
		if seen[w] != c {
			t.Errorf("%s ends at %q, want %q (output:\n%s)", w, seen[w], c, out.String())
		}
	}
}
