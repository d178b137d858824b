package memlimit

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Available is the memory the system can give a process without swapping: MemAvailable in
// /proc/meminfo. ok is false where there is no such file (other systems) or it cannot be read;
// the commands then skip their memory check. Under a container's memory limit it is the
// machine's figure, not the container's.
func Available() (bytes int64, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return parseMemAvailable(bufio.NewScanner(f))
}

// parseMemAvailable reads the "MemAvailable:  123456 kB" line of a meminfo listing.
func parseMemAvailable(sc *bufio.Scanner) (int64, bool) {
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || fields[0] != "MemAvailable:" || fields[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil || kb < 0 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// Size writes a byte count for people: "512.0 MiB", "3.2 GiB".
func Size(n int64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}
