//go:build linux

package hf_test

// Peak memory of loading a ~100 MB checkpoint, measured in a child process (this test binary
// re-run with HF_PEAK_RSS_DIR set) so that writing the checkpoint does not count:
//
//	go test ./models/hf -run '^$' -bench LoadPeakRSS -benchtime 1x
//
// It reports the child's peak resident set (VmHWM of /proc/self/status, which exec resets;
// getrusage's ru_maxrss would include the parent's memory at fork) for three jobs: "baseline"
// builds the model's graph once but reads no weights; "load" is hf.Load; "load+forward" is
// engine.Load and a forward pass over 8 tokens. The weights' float32 size is "weights-MB".

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/hf"
)

// peakModel is Llama-shaped with tied embeddings: 16000·512 + 4·(4·512² + 3·512·2048) + norms
// = 25.2M parameters, 101 MB in float32.
var peakModel = hfConfig{Vocab: 16000, Dim: 512, Layers: 4, Heads: 8, KVHeads: 8, Hidden: 2048, Eps: 1e-5, RopeTheta: 10000}

func BenchmarkLoadPeakRSS(b *testing.B) {
	for _, dtype := range []string{"F32", "BF16"} {
		b.Run(dtype, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "model")
			fx := llamaFixtureSized("llama", true, peakModel)
			w := randomWeights(rand.New(rand.NewPCG(1, 2)), fx.specs)
			writeHF(b, dir, fx.config, fx.specs, w, dtype, 1)
			params := 0
			for _, s := range fx.specs {
				params += specsSize(s)
			}
			w = nil
			weightsMB := float64(params) * 4 / 1e6
			st, _ := os.Stat(filepath.Join(dir, "model.safetensors"))
			for range b.N {
				for _, job := range []string{"baseline", "load", "load+forward"} {
					cmd := exec.Command(os.Args[0], "-test.run", "^TestPeakRSSChild$")
					cmd.Env = append(os.Environ(), "HF_PEAK_RSS_DIR="+dir, "HF_PEAK_RSS_JOB="+job)
					out, err := cmd.CombinedOutput()
					if err != nil {
						b.Fatalf("%s: %v\n%s", job, err, out)
					}
					m := peakLine.FindSubmatch(out)
					if m == nil {
						b.Fatalf("%s: no peak reported:\n%s", job, out)
					}
					kb, _ := strconv.Atoi(string(m[1]))
					b.ReportMetric(float64(kb)*1024/1e6, job+"-peak-MB")
				}
			}
			b.ReportMetric(weightsMB, "weights-MB")
			b.ReportMetric(float64(st.Size())/1e6, "file-MB")
		})
	}
}

// TestPeakRSSChild is the child of BenchmarkLoadPeakRSS; it does nothing in a normal run.
func TestPeakRSSChild(t *testing.T) {
	dir, job := os.Getenv("HF_PEAK_RSS_DIR"), os.Getenv("HF_PEAK_RSS_JOB")
	if dir == "" {
		t.Skip("child process of BenchmarkLoadPeakRSS")
	}
	backend, err := engine.NewBackend("")
	if err != nil {
		t.Fatal(err)
	}
	switch job {
	case "baseline":
		cfg, err := hf.ReadConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		m, err := models.New(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Params(backend); err != nil {
			t.Fatal(err)
		}
	case "load":
		if _, _, err := hf.Load(dir, backend); err != nil {
			t.Fatal(err)
		}
	case "load+forward":
		e, err := engine.Load(dir, "", 64)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Forward([][]int{{1, 2, 3, 4, 5, 6, 7, 8}}, [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal(fmt.Errorf("unknown job %q", job))
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	m := hwmLine.FindSubmatch(status)
	if m == nil {
		t.Fatal("no VmHWM in /proc/self/status")
	}
	fmt.Printf("PEAK_KB %s\n", m[1])
}

var (
	hwmLine  = regexp.MustCompile(`VmHWM:\s+(\d+) kB`)
	peakLine = regexp.MustCompile(`PEAK_KB (\d+)`)
)
