package bench

import (
	"flag"
	"fmt"
	"github.com/posformer/posformer/cmd/internal/flaghelp"
	"io"
	"os"
)

// The speed benchmark (speed.go), the random llama2.c checkpoint generator (llama2c.go) and the
// test text's writer (writetext.go) are modes of their own, each with its own flags.
func init() {
	modes["speed"] = runSpeed
	modes["make-llama2c"] = runMakeLlama2c
	modes["write-text"] = runWriteText
}

// parseMode parses a mode's flags: -h prints them (help is true), a bad flag is a one-line
// error naming the mode.
func parseMode(fs *flag.FlagSet, mode string, args []string) (help bool, err error) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(os.Stderr)
			flaghelp.PrintDefaults(fs)
			return true, nil
		}
		return false, fmt.Errorf("-%s: %w (run with -%s -h for the flags)", mode, err, mode)
	}
	return false, nil
}
