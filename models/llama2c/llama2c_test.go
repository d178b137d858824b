package llama2c

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/posformer/posformer/models"
)

// smallConfig is a GQA model small enough to write in every version in milliseconds.
func smallConfig(tied bool) models.Config {
	cfg := models.Config{Kind: models.Decoder, VocabSize: 40, Dim: 16, NumLayers: 2, NumHeads: 4, NumKVHeads: 2,
		HiddenDim: 24, MaxSeqLen: 8, TieEmbeddings: tied,
		Positional: map[string]any{"name": "rope", "layout": "interleaved"}}
	cfg.Defaults()
	return cfg
}

func writeSmall(t *testing.T, cfg models.Config, version int) (string, Weights) {
	t.Helper()
	w, err := RandomWeights(cfg, 7, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.bin")
	if err := Write(path, cfg, w, version); err != nil {
		t.Fatal(err)
	}
	return path, w
}

// fileSize is the size of a file by the formulas of export.py, written out independently of
// Header.Layout: header, then every tensor, int8 + float32 scales in version 2.
func fileSize(cfg models.Config, version, groupSize int) int64 {
	d, hd, l, v, kv := cfg.Dim, cfg.HiddenDim, cfg.NumLayers, cfg.VocabSize, cfg.Dim/cfg.NumHeads*cfg.NumKVHeads
	norms := int64(2*l*d + d)
	matrices := int64(v*d + l*(d*d+2*kv*d+d*d+3*d*hd))
	if !cfg.TieEmbeddings {
		matrices += int64(v * d)
	}
	switch version {
	case 0:
		return 28 + 4*(norms+matrices+int64(cfg.MaxSeqLen*(d/cfg.NumHeads)))
	case 1:
		return 256 + 4*(norms+matrices)
	}
	return 256 + 4*norms + matrices + 4*matrices/int64(groupSize)
}

func TestRoundTrip(t *testing.T) {
	for _, tied := range []bool{true, false} {
		for version := range 3 {
			cfg := smallConfig(tied)
			path, want := writeSmall(t, cfg, version)
			info, _ := os.Stat(path)
			if got, exp := info.Size(), fileSize(cfg, version, 16); got != exp {
				t.Errorf("v%d tied=%v: file has %d bytes, export.py's layout gives %d", version, tied, got, exp)
			}
			h, got, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			back := h.Config()
			if back.Dim != cfg.Dim || back.NumKVHeads != cfg.NumKVHeads || back.TieEmbeddings != tied || back.MaxSeqLen != cfg.MaxSeqLen || h.Version != version {
				t.Errorf("v%d tied=%v: header read back as %+v", version, tied, h)
			}
			if len(got) != len(want) {
				t.Errorf("v%d tied=%v: read %d tensors, wrote %d", version, tied, len(got), len(want))
			}
			for name, w := range want {
				g := got[name]
				if len(g) != len(w) {
					t.Fatalf("v%d: %s has %d values, want %d", version, name, len(g), len(w))
				}
				for i := range w {
					tol := 0.0
					if version == 2 && !strings.Contains(name, "norm") {
						// Q8_0: |w - q·s| <= s/2 with s = max|group|/127 (groups of 16 here).
						gmax := 0.0
						for _, v := range w[i/16*16 : i/16*16+16] {
							gmax = math.Max(gmax, math.Abs(float64(v)))
						}
						tol = gmax/127/2 + 1e-7
					}
					if math.Abs(float64(g[i]-w[i])) > tol {
						t.Fatalf("v%d tied=%v: %s[%d] = %g, wrote %g (tolerance %g)", version, tied, name, i, g[i], w[i], tol)
					}
				}
			}
		}
	}
}

// The header bytes at the offsets export.py writes them.
func TestHeaderBytes(t *testing.T) {
	cfg := smallConfig(false)
	for version := range 3 {
		path, _ := writeSmall(t, cfg, version)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		i32 := func(off int) int32 { return int32(binary.LittleEndian.Uint32(data[off:])) }
		params := 0
		if version > 0 {
			if string(data[:4]) != "24ka" || i32(4) != int32(version) {
				t.Errorf("v%d: starts %q version %d, want the magic 0x616b3432 (bytes \"24ka\") and %d", version, data[:4], i32(4), version)
			}
			params = 8
		}
		want := []int32{16, 24, 2, 4, 2, 40, 8}
		if version == 0 {
			want[5] = -40 // unshared classifier
		}
		for i, w := range want {
			if got := i32(params + 4*i); got != w {
				t.Errorf("v%d: header int %d is %d, want %d", version, i, got, w)
			}
		}
		if version > 0 && data[36] != 0 {
			t.Errorf("v%d: shared-classifier byte %d, want 0", version, data[36])
		}
		if version == 2 && i32(37) != 16 {
			t.Errorf("v2: group size %d at byte 37, want 16 (64 halved until it divides dim 16)", i32(37))
		}
	}
}

// QuantizeQ80 against the definition: scale = max|w|/127, q = round-half-even(w/scale).
func TestQuantizeQ80(t *testing.T) {
	w := []float32{0.5, -1.27, 0.01, 0.635, 0, 0, 0, 0}
	q, s := QuantizeQ80(w, 4)
	if s[0] != float32(1.27)/127 || s[1] != 0 {
		t.Fatalf("scales %v, want [%g 0]", s, float32(1.27)/127)
	}
	// 0.5/0.01 = 50, -127, 1, 0.635/0.01 = 63.5 -> 64 (half to even)
	wantQ := []int8{50, -127, 1, 64, 0, 0, 0, 0}
	for i, v := range wantQ {
		if int8(q[i]) != v {
			t.Errorf("q[%d] = %d, want %d", i, int8(q[i]), v)
		}
	}
}

// Load puts every tensor into the variable our checkpoints use, value for value.
func TestLoadVariables(t *testing.T) {
	backend, err := simplego.New("ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	for _, tied := range []bool{true, false} {
		cfg := smallConfig(tied)
		path, want := writeSmall(t, cfg, 1)
		m, ctx, err := Load(path, backend)
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.SchemeName() != "rope" || m.Config.Positional["layout"] != "interleaved" || m.Config.NormEps != 1e-5 {
			t.Errorf("config %+v", m.Config)
		}
		got, err := FromContext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("tied=%v: %d variables, want %d", tied, len(got), len(want))
		}
		for name, w := range want {
			for i := range w {
				if got[name][i] != w[i] {
					t.Fatalf("variable %s[%d] = %g, want %g", name, i, got[name][i], w[i])
				}
			}
		}
	}
}

// Edits change the configuration a header implies (RoPE scaling chosen at inference time).
func TestLoadEdits(t *testing.T) {
	backend, _ := simplego.New("ops_sequential")
	path, _ := writeSmall(t, smallConfig(true), 0)
	scale := func(c *models.Config) error {
		c.Positional["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 4.0}
		return nil
	}
	m, _, err := Load(path, backend, scale)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Config.Positional["rope_scaling"]; !ok {
		t.Errorf("edit not applied: %v", m.Config.Positional)
	}
	_, _, err = Load(path, backend, func(*models.Config) error { return errors.New("bad edit") })
	assertOneLine(t, err, "bad edit")
}

func assertOneLine(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("want a one-line error containing %q, got %v", want, err)
	}
}

func TestErrors(t *testing.T) {
	backend, _ := simplego.New("ops_sequential")
	cfg := smallConfig(false)
	path, w := writeSmall(t, cfg, 1)
	data, _ := os.ReadFile(path)
	dir := t.TempDir()
	try := func(name string, b []byte, want string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(p, backend)
		assertOneLine(t, err, want)
	}
	// Version 1 stores the 2 attention norms first, then the FFN norms, ...; the classifier last.
	try("short-first.bin", data[:256+10], "tensor layer_0.attn_norm.weight [16] needs 64 bytes at offset 256 but only 10 are left")
	try("short-last.bin", data[:len(data)-1], "truncated file: tensor output.weight [40 16]")
	try("tiny.bin", data[:3], "shorter than a llama2.c header")
	try("long.bin", append(append([]byte{}, data...), 0), "does not describe this file")

	bad := append([]byte{}, data...)
	binary.LittleEndian.PutUint32(bad[4:], 7)
	try("version.bin", bad, "unsupported llama2.c version 7")
	bad = append([]byte{}, data...)
	copy(bad, "ak42")
	try("endian.bin", bad, "big-endian")

	legacy := func(params ...int32) []byte {
		var b []byte
		for _, p := range params {
			b = binary.LittleEndian.AppendUint32(b, uint32(p))
		}
		return append(b, make([]byte, 4096)...)
	}
	try("heads.bin", legacy(10, 8, 1, 4, 4, 8, 8), "dim=10, not a multiple of n_heads=4")
	try("kv.bin", legacy(12, 8, 1, 6, 4, 8, 8), "n_heads=6, not a multiple of n_kv_heads=4")
	try("odd.bin", legacy(12, 8, 1, 4, 4, 8, 8), "RoPE needs an even head size")
	try("zero.bin", legacy(0, 8, 1, 4, 4, 8, 8), "all must be >= 1")
	try("huge.bin", legacy(1<<30, 1<<30, 1<<30, 1, 1, 1<<30, 1), "larger than any file can be")
	try("text.bin", []byte("this is not a checkpoint, just some text that is long enough"), `no "ak42" magic`)

	// The writer does not check values, so it can make a corrupt file.
	w["layer_1.ffn.w2.weight"][5] = float32(math.NaN())
	nanPath := filepath.Join(dir, "nan.bin")
	if err := Write(nanPath, cfg, w, 1); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(nanPath, backend)
	assertOneLine(t, err, "tensor layer_1.ffn.w2.weight has a non-finite value NaN at index 5")

	_, _, err = Load(filepath.Join(dir, "missing.bin"), backend)
	assertOneLine(t, err, "no such file")
	_, _, err = Load(dir, backend)
	assertOneLine(t, err, "is a directory")
}

// A version 2 file whose scale is infinite dequantizes to non-finite values: refused.
func TestErrorsQ8(t *testing.T) {
	cfg := smallConfig(true)
	path, _ := writeSmall(t, cfg, 2)
	data, _ := os.ReadFile(path)
	// The first quantized tensor (the token embedding, 40·16 int8 values) follows the
	// float32 norms; its first scale follows its values.
	off := 256 + 4*(2*2*16+16) + 40*16
	binary.LittleEndian.PutUint32(data[off:], math.Float32bits(float32(math.Inf(1))))
	p := filepath.Join(t.TempDir(), "inf.bin")
	os.WriteFile(p, data, 0o644)
	_, _, err := ReadFile(p)
	assertOneLine(t, err, "tensor tok_embeddings.weight has a non-finite value")
}

func TestWriteRefuses(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		mutate func(*models.Config)
		want   string
	}{
		{func(c *models.Config) { c.Kind = models.Encoder }, "decoders only"},
		{func(c *models.Config) { c.NormEps = 1e-6 }, "eps"},
		{func(c *models.Config) { c.FFN = "gelu" }, "SwiGLU"},
		{func(c *models.Config) { c.Bias = true }, "SwiGLU"},
		{func(c *models.Config) { c.Positional = map[string]any{"name": "rope"} }, "interleaved"},
		{func(c *models.Config) { c.Positional = map[string]any{"name": "alibi"} }, "interleaved"},
		{func(c *models.Config) { c.Positional["base"] = 500000.0 }, "base 10000"},
		{func(c *models.Config) {
			c.Positional["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": 2.0}
		}, "unscaled RoPE"},
	}
	for _, c := range cases {
		cfg := smallConfig(true)
		cfg.Positional = map[string]any{"name": "rope", "layout": "interleaved"}
		c.mutate(&cfg)
		w, _ := RandomWeights(smallConfig(true), 1, 0.1)
		err := Write(filepath.Join(dir, "x.bin"), cfg, w, 1)
		assertOneLine(t, err, c.want)
	}
	w, _ := RandomWeights(smallConfig(true), 1, 0.1)
	assertOneLine(t, Write(filepath.Join(dir, "x.bin"), smallConfig(true), w, 3), "version 3 does not exist")
	delete(w, "norm.weight")
	assertOneLine(t, Write(filepath.Join(dir, "x.bin"), smallConfig(true), w, 1), "tensor norm.weight [16] needs 16 values, got 0")
	assertOneLine(t, Write(filepath.Join(dir, "no", "x.bin"), smallConfig(true), w, 1), "writing")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed writes left files behind: %v", entries)
	}
}
