package speed

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// results are two hand-made models: a has two prompt lengths and two batch sizes, b one of
// each and no decode steps.
func results() []Result {
	return []Result{
		{
			Model: "a", Params: 1_500_000, WeightBytes: 3 << 20, KVBytes: 1 << 20, Capacity: 32,
			LoadSec: 0.13, FirstTokenSec: 0.5, WarmupSec: 1.25, CompiledAtWarmup: 7, CompiledLate: 0,
			Prefill:         []PrefillPoint{{Tokens: 16, TokPerSec: 1000, Ms: 16}, {Tokens: 64, TokPerSec: 2500.4, Ms: 25.6}},
			DecodeTokPerSec: 250.3, DecodeCPUMsPerToken: 3.5, Generated: 10,
			MsPerToken: []float64{1.23456, 1, 1, 1, 1, 1, 1, 1, 3, 5},
			Batched:    []BatchPoint{{Batch: 1, TokPerSec: 250, CPUMsPerToken: 4}, {Batch: 2, TokPerSec: 480.6, CPUMsPerToken: 2.126}},
			PeakRSS:    50 << 20,
		},
		{
			Model: "b", Params: 260032, WeightBytes: 2 << 20, KVBytes: 1 << 18,
			LoadSec: 0.03, FirstTokenSec: 0.04, WarmupSec: 0.12, CompiledAtWarmup: 21, CompiledLate: 1,
			Prefill:         []PrefillPoint{{Tokens: 16, TokPerSec: 5257.3}},
			DecodeTokPerSec: 17575.14, DecodeCPUMsPerToken: 0.06, Generated: 16,
			Batched: []BatchPoint{{Batch: 1, TokPerSec: 11603.4, CPUMsPerToken: 0.123}},
			PeakRSS: 40<<20 + 400000,
		},
	}
}

func TestWriteTable(t *testing.T) {
	// a: first 8 steps (1.23456+7)/8 = 1.03 ms, last 8 (6+3+5)/8 = 1.75 ms; 50 MB peak, 3+1 MB
	// weights and cache. b: no steps, 0 and 0; 40.4 MB peak, 2.25 MB. Prefill columns are the
	// union of the lengths, sorted, "-" where a model has none.
	want := `| model | params | load s | first token s | warm-up s (graphs) | decode tok/s | decode CPU ms/token | ms/token first→last | graphs after warm-up | peak RSS MB (weights+KV MB) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| a | 1.50M | 0.13 | 0.50 | 1.25 (7) | 250.3 (10 tokens) | 3.50 | 1.03 → 1.75 | 0 | 50 (4) |
| b | 0.26M | 0.03 | 0.04 | 0.12 (21) | 17575.1 (16 tokens) | 0.06 | 0.00 → 0.00 | 1 | 40 (2) |

| prefill tok/s | prompt 16 | prompt 64 |
| --- | --- | --- |
| a | 1000 | 2500 |
| b | 5257 | - |

| batched decode tok/s, all rows (CPU ms/token) | batch 1 | batch 2 |
| --- | --- | --- |
| a | 250 (4.00) | 481 (2.13) |
| b | 11603 (0.12) |
`
	var b strings.Builder
	WriteTable(&b, results())
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestCSV(t *testing.T) {
	// %g: shortest form, with an exponent from 1e6 up.
	want := `model,figure,x,value
a,params,0,1.5e+06
a,load_s,0,0.13
a,first_token_s,0,0.5
a,warmup_s,0,1.25
a,graphs_at_warmup,0,7
a,graphs_after_warmup,0,0
a,decode_tok_s,10,250.3
a,decode_cpu_ms_per_token,10,3.5
a,prefill_tok_s,16,1000
a,prefill_tok_s,64,2500.4
a,batched_decode_tok_s,1,250
a,batched_decode_cpu_ms_per_token,1,4
a,batched_decode_tok_s,2,480.6
a,batched_decode_cpu_ms_per_token,2,2.126
a,peak_rss_bytes,0,5.24288e+07
a,weights_plus_kv_bytes,0,4.194304e+06
b,params,0,260032
b,load_s,0,0.03
b,first_token_s,0,0.04
b,warmup_s,0,0.12
b,graphs_at_warmup,0,21
b,graphs_after_warmup,0,1
b,decode_tok_s,16,17575.14
b,decode_cpu_ms_per_token,16,0.06
b,prefill_tok_s,16,5257.3
b,batched_decode_tok_s,1,11603.4
b,batched_decode_cpu_ms_per_token,1,0.123
b,peak_rss_bytes,0,4.234304e+07
b,weights_plus_kv_bytes,0,2.359296e+06
`
	if got := string(CSV(results())); got != want {
		t.Errorf("speed.csv:\n%s\nwant:\n%s", got, want)
	}
	want = `model,position,ms
a,1,1.2346
a,2,1.0000
a,3,1.0000
a,4,1.0000
a,5,1.0000
a,6,1.0000
a,7,1.0000
a,8,1.0000
a,9,3.0000
a,10,5.0000
`
	if got := string(PositionsCSV(results())); got != want {
		t.Errorf("speed-positions.csv:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out") // created by WriteFiles
	rs := results()
	if err := WriteFiles(dir, rs); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"speed.csv": CSV(rs), "speed-positions.csv": PositionsCSV(rs)} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	png, err := os.ReadFile(filepath.Join(dir, "speed.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("speed.png: %d bytes, %v; want a PNG", len(png), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("%d files in %s, want the 3 (no temporary files left)", len(entries), dir)
	}
}

// A Result crosses from the child process to the parent as JSON.
func TestResultJSON(t *testing.T) {
	for _, r := range results() {
		js, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Result
		if err := json.Unmarshal(js, &back); err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("JSON round trip: %+v, %v; want %+v", back, err, r)
		}
	}
}
