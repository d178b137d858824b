package memlimit

import (
	"bufio"
	"strings"
	"testing"
)

func TestParseMemAvailable(t *testing.T) {
	const listing = "MemTotal:       16318412 kB\nMemFree:         1203472 kB\nMemAvailable:    9437184 kB\nBuffers:          372660 kB\n"
	got, ok := parseMemAvailable(bufio.NewScanner(strings.NewReader(listing)))
	if !ok || got != 9437184<<10 {
		t.Errorf("MemAvailable of 9437184 kB: %d, %v; want %d", got, ok, int64(9437184)<<10)
	}
	if _, ok := parseMemAvailable(bufio.NewScanner(strings.NewReader("MemTotal: 1 kB\n"))); ok {
		t.Error("a listing without MemAvailable was read as having it")
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{512 << 20: "512.0 MiB", 3<<30 + 1<<29: "3.5 GiB", 2 << 40: "2.0 TiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
