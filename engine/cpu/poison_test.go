package cpu

import (
	"flag"
	"os"
	"testing"
)

// The package's tests run with poisoned arenas: an element a step reads before any step wrote it
// is NaN, which the tests' comparisons catch, rather than a fresh arena's zero that happens to be
// right (a step that zeroes less than it should passes against zeros). Benchmarks run without:
// filling the arena would be timed with every call; so does -short, which the fill slows by a
// seventh.
func TestMain(m *testing.M) {
	flag.Parse()
	poisonArenas = flag.Lookup("test.bench").Value.String() == "" && !testing.Short()
	os.Exit(m.Run())
}
