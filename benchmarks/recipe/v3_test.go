package recipe

import (
	"slices"
	"strings"
	"testing"

	"github.com/posformer/posformer/engine/train/tasks"
)

func argValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// Before the sweep: only lm's and copy's seed-1 models at every rate are final; everything else
// waits on the sweep that sets its rate, and names it. Each scheme's length-dependent settings
// are scaled to the task's L.
func TestV3BeforeTheSweep(t *testing.T) {
	ms := V3.Models("w", tasks.Names(), V3.Schemes, 0)
	ids := map[string]Model{}
	for _, m := range ms {
		if _, dup := ids[m.ID()]; dup {
			t.Fatalf("%s twice", m.ID())
		}
		ids[m.ID()] = m
	}
	for _, m := range ms {
		sweep := m.Seed == 1 && (m.Task == tasks.LM || m.Task == tasks.Copy) && (m.Variant == "" || strings.HasPrefix(m.Variant, "lr="))
		if sweep != (m.Waiting == "") {
			t.Errorf("%s (variant %q): waiting %q", m.ID(), m.Variant, m.Waiting)
		}
		for _, id := range m.After {
			if _, ok := ids[id]; !ok {
				t.Errorf("%s waits on %s, which is not in the grid", m.ID(), id)
			}
		}
		if m.Init == "" && argValue(m.Args, "-plateau-min") == "" {
			t.Errorf("%s has no plateau guard: %v", m.ID(), m.Args)
		}
	}
	for _, c := range []struct{ id, flag, want string }{
		{"lm/rope-lr0.0005", "-lr", "0.0005"}, {"lm/rope-lr0.002", "-lr", "0.002"}, {"lm/rope", "-lr", "0.001"},
		{"lm/fire", "-pe", "init_l=32"}, {"copy/fire", "-pe", "init_l=16"}, {"lm/fire-initl512", "-pe", "init_l=512"},
		{"lm/t5", "-pe", "max_distance=32"}, {"mlm/t5", "-pe", "max_distance=32"}, {"copy/t5", "-pe", "max_distance=32"},
		{"lm/t5-maxd128", "-pe", "max_distance=128"}, {"lm/rope-pose4", "-pose", "512"}, {"passkey/rope-pose4", "-pose", "256"},
		{"mqar/rope", "-steps", "8000"}, {"mqar/rope", "-plateau-min", "4000"}, {"copy/rope-randpos", "-random-positions", "1024"},
	} {
		if got := argValue(ids[c.id].Args, c.flag); got != c.want {
			t.Errorf("%s %s = %q, want %q (%v)", c.id, c.flag, got, c.want, ids[c.id].Args)
		}
	}
	if a := strings.Join(ids["lm/dape-fire"].Args, " "); !strings.Contains(a, "-pe bias=fire -pe init_l=32") {
		t.Errorf("DAPE over FIRE without FIRE's scaled threshold: %s", a)
	}
	if a := strings.Join(ids["copy/none-bos"].Args, " "); !strings.Contains(a, " -bos ") {
		t.Errorf("NoPE with BOS: %s", a)
	}
	if _, ok := ids["mlm/cope"]; ok {
		t.Error("CoPE is decoder-only, yet trains on mlm")
	}
	// Seeds: five on the rows v2 left open, three elsewhere; PI's fine-tunes follow their base.
	for id, want := range map[string]bool{"copy/none-seed5": true, "copy/rope-randpos-seed5": true, "passkey/rope-pi4-seed5": true,
		"passkey/rope-ft4-seed5": true, "copy/alibi-seed4": false, "lm/rope-seed4": false, "copy/none-bos-seed4": false} {
		if _, ok := ids[id]; ok != want {
			t.Errorf("%s in the grid: %v, want %v", id, ok, want)
		}
	}
	pi := ids["lm/rope-pi4"]
	if pi.Init != "rope" || argValue(pi.Args, "--rope-scaling") != "linear" || argValue(pi.Args, "-seq") != "512" || pi.Waiting == "" {
		t.Errorf("PI fine-tune: init %q, waiting %q, %v", pi.Init, pi.Waiting, pi.Args)
	}
	ft := ids["lm/rope-ft4"]
	if argValue(ft.Args, "--rope-scaling") != "" || argValue(ft.Args, "-steps") != argValue(pi.Args, "-steps") || argValue(ft.Args, "-lr") != argValue(pi.Args, "-lr") {
		t.Errorf("the control differs from PI's fine-tune in more than the interpolation: %v / %v", ft.Args, pi.Args)
	}
	if y := ids["passkey/rope-yarn4"]; argValue(y.Args, "--yarn-beta-fast") != "2" || argValue(y.Args, "-steps") != "400" {
		t.Errorf("YaRN fine-tune: %v", y.Args)
	}
}

// After the sweep: every model of a scheme trains at the rate chosen on its sweep task (lm's for
// mlm, copy's for the synthetic tasks), and the fine-tunes start from the sweep's model at that
// rate, the seed-1 model the tables read.
func TestV3AfterTheSweep(t *testing.T) {
	r := V3
	r.Choose = func(task, scheme string) (float64, bool) {
		if task == tasks.LM {
			return 0.002, true
		}
		return 0.0005, true
	}
	ms := r.Models("w", tasks.Names(), r.Schemes, 0)
	for _, m := range ms {
		if m.Waiting != "" {
			t.Errorf("%s still waits: %s", m.ID(), m.Waiting)
		}
		if m.Init != "" || strings.HasPrefix(m.Variant, "lr=") || (m.Seed == 1 && m.Variant == "" && (m.Task == tasks.LM || m.Task == tasks.Copy)) {
			continue
		}
		want := "0.0005"
		if m.Task == tasks.LM || m.Task == tasks.MLM {
			want = "0.002"
		}
		if got := argValue(m.Args, "-lr"); got != want {
			t.Errorf("%s trains at -lr %s, want the sweep's %s", m.ID(), got, want)
		}
	}
	for _, m := range ms {
		switch m.ID() {
		case "lm/rope-pi4":
			if m.Init != "rope-lr0.002" || argValue(m.Args, "-init") != "w/lm/rope-lr0.002" {
				t.Errorf("lm PI starts from %s (%v), want the chosen rate's model", m.Init, m.Args)
			}
		case "passkey/rope-pi4":
			if m.Init != "rope" {
				t.Errorf("passkey PI starts from %s, want its own seed-1 model", m.Init)
			}
		}
	}
}

// Every model of the v3 grid gets its own label back from its folder's name (what the manifest
// and cmd/bench -m show), and a plain model none.
func TestVariantOf(t *testing.T) {
	r := V3
	for _, m := range r.Models("w", tasks.Names(), r.Schemes, 0) {
		if got := r.VariantOf(m.Scheme, m.Name, m.Seed); got != m.Variant {
			t.Errorf("%s: VariantOf %q, want %q", m.ID(), got, m.Variant)
		}
	}
}

// A learned table covers the longest evaluated input, 16L, and the BOS token before it where
// the model reads one (without it, learned + BOS had no 16L cell: position 16L was past its
// table).
func TestV3LearnedTableCoversBOS(t *testing.T) {
	for _, m := range V3.Models("w", []string{tasks.Copy}, []string{"learned"}, 0) {
		want := "max_positions=1024"
		if slices.Contains(m.Args, "-bos") {
			want = "max_positions=1025"
		}
		if !strings.Contains(strings.Join(m.Args, " "), "-pe "+want) {
			t.Errorf("%s: %v, want -pe %s", m.ID(), m.Args, want)
		}
	}
}
