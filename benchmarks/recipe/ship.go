package recipe

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/posformer/posformer/models"
)

// Ships reports whether a model of the grid is one of the shipped checkpoints (weights/bench):
// every model of ShipTasks at seed ShipSeed, its variants included. The rest of the grid is
// listed in the results (curves and train.json beside them) and can be trained again by its
// recorded command; one seed of two tasks keeps the repository small.
func (r Recipe) Ships(m Model) bool {
	return m.Seed == r.ShipSeed && slices.Contains(r.ShipTasks, m.Task)
}

// Ship copies a finished checkpoint from src to dst with its weights stored as float16 (half
// the bytes; every weight of these models lies far inside float16's range, and the loader
// widens to float32), with its config, train.json and loss curve. It writes a temporary folder
// beside dst and renames it over dst, so dst is never half a checkpoint.
func Ship(src, dst string) error {
	if _, err := ReadTrainInfo(src); err != nil {
		return fmt.Errorf("shipping %s: %w", src, err)
	}
	return models.CopyCheckpoint(src, dst, "F16")
}

// Shipped reports whether dst holds a checkpoint trained by args, wherever the two were trained:
// the folders of -o and -init count by their last two elements (task/name).
func Shipped(dst string, args []string) bool {
	ti, err := ReadTrainInfo(dst)
	if err != nil {
		return false
	}
	return slices.Equal(portableArgs(RecordedArgs(ti.Command)), portableArgs(args))
}

// portableArgs is args with the folders of -o and -init cut to task/name.
func portableArgs(args []string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "-o" || out[i] == "-init" {
			dir := filepath.ToSlash(out[i+1])
			parts := strings.Split(dir, "/")
			out[i+1] = strings.Join(parts[max(0, len(parts)-2):], "/")
		}
	}
	return out
}
