package positional

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// Options.Floats reads JSON arrays, Go slices, a lone number and "a,b,c" strings, and records
// anything else as an error without failing the other options.
func TestOptionsFloats(t *testing.T) {
	o := NewOptions(map[string]any{
		"json":   []any{0.5, json.Number("0.25"), 2},
		"go":     []float64{1, 2},
		"one":    3.0,
		"flag":   " 0.5, 0.125 ",
		"empty":  []any{},
		"mixed":  []any{1.0, "x"},
		"word":   "a,b",
		"object": map[string]any{"a": 1.0},
	})
	for _, c := range []struct {
		key  string
		want []float64
	}{
		{"json", []float64{0.5, 0.25, 2}},
		{"go", []float64{1, 2}},
		{"one", []float64{3}},
		{"flag", []float64{0.5, 0.125}},
		{"empty", []float64{}},
		{"missing", []float64{7, 8}},
		{"mixed", []float64{7, 8}},
		{"word", []float64{7, 8}},
		{"object", []float64{7, 8}},
	} {
		if got := o.Floats(c.key, []float64{7, 8}); !slices.Equal(got, c.want) {
			t.Errorf("Floats(%q) = %v, want %v", c.key, got, c.want)
		}
	}
	err := o.Err()
	if err == nil {
		t.Fatal("no error for malformed lists")
	}
	for _, key := range []string{"mixed", "word", "object"} {
		if !strings.Contains(err.Error(), `"`+key+`" must be a list of numbers`) {
			t.Errorf("error %q does not mention %q", err, key)
		}
	}
	for _, key := range []string{"json", "go", "one", "flag", "empty"} {
		if strings.Contains(err.Error(), `"`+key+`"`) {
			t.Errorf("error %q mentions the valid option %q", err, key)
		}
	}
}

// The slopes option replaces the paper's m_h head by head, in every accepted spelling.
func TestALiBiSlopesOption(t *testing.T) {
	const H = 4
	want := []float64{0.5, 0.1, 0.3, 2}
	qPos := [][]int32{{3, 10}}
	kPos := [][]int32{{0, 3, 7, 12}}
	for _, spelling := range []any{
		[]any{0.5, 0.1, 0.3, 2.0}, // decoded JSON
		want,                      // Go callers
		"0.5,0.1,0.3,2",           // -pe slopes=0.5,0.1,0.3,2
	} {
		s, err := New("alibi", map[string]any{"slopes": spelling}, Arch{NumHeads: H})
		if err != nil {
			t.Fatalf("slopes %v: %v", spelling, err)
		}
		if got := s.(*ALiBi).Slopes(); !slices.Equal(got, want) {
			t.Errorf("slopes %v: Slopes() = %v, want %v", spelling, got, want)
		}
		out := MustExecOnce(backend(t), func(g *Graph) *Node {
			return s.(Bias).Bias(nil, 0, Const(g, qPos), Const(g, kPos), H)
		})
		flat := tensors.MustCopyFlatData[float32](out)
		for h := range H {
			for i := range 2 {
				for j := range 4 {
					w := -want[h] * math.Abs(float64(qPos[0][i]-kPos[0][j]))
					if got := float64(flat[(h*2+i)*4+j]); !(math.Abs(got-w) <= 1e-5) {
						t.Errorf("slopes %v: bias[%d,%d,%d] = %g, want %g", spelling, h, i, j, got, w)
					}
				}
			}
		}
	}
	s, err := New("alibi", nil, Arch{NumHeads: 6})
	if err != nil || !slices.Equal(s.(*ALiBi).Slopes(), ALiBiSlopes(6)) {
		t.Errorf("default slopes: %v, %v; want the paper's %v", s, err, ALiBiSlopes(6))
	}
}

func TestALiBiSlopesErrors(t *testing.T) {
	for _, c := range []struct {
		slopes any
		want   string
	}{
		{[]any{0.5, 0.25}, "slopes has 2 values, want one per head (4)"},
		{[]any{0.5, 0.25, 0.1, 0.05, 0.01}, "slopes has 5 values"},
		{[]any{0.5, 0.0, 0.1, 0.05}, "head 1 has 0"},
		{[]any{0.5, 0.25, -0.1, 0.05}, "head 2 has -0.1"},
		{[]any{0.5, 0.25, 0.1, math.Inf(1)}, "head 3 has +Inf"},
		{[]any{0.5, 0.25, 0.1, math.NaN()}, "head 3 has NaN"},
		{"0.5,x,0.1,0.05", `"slopes" must be a list of numbers`},
		{true, `"slopes" must be a list of numbers`},
	} {
		_, err := New("alibi", map[string]any{"slopes": c.slopes}, Arch{NumHeads: 4})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("slopes %v: error %v, want one line mentioning %q", c.slopes, err, c.want)
		}
	}
}
