package hf_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/models/hf"
)

// Each family's norm epsilon key refuses what is not a small positive number, naming itself;
// the value as written still loads.
func TestNormEpsRefused(t *testing.T) {
	for key, fx := range map[string]fixture{"rms_norm_eps": llamaFixture("llama", false), "layer_norm_epsilon": gpt2Fixture(""), "layer_norm_eps": bertFixture(false)} {
		w := randomWeights(rand.New(rand.NewPCG(4, 4)), fx.specs)
		write := func(eps any) string {
			dir := filepath.Join(t.TempDir(), "m")
			config := map[string]any{}
			for k, v := range fx.config {
				config[k] = v
			}
			config[key] = eps
			writeHF(t, dir, config, fx.specs, w, "F32", 1)
			return dir
		}
		for _, c := range []struct {
			eps  any
			want string
		}{
			{-1, key + " is -1: a norm epsilon must be positive, finite and at most 1"},
			{0, key + " is 0: a norm epsilon must be positive, finite and at most 1"},
			{1e300, key + " is 1e+300: a norm epsilon must be positive, finite and at most 1"},
			{"1e-5", key + " must be a number, got 1e-5"},
		} {
			_, err := engine.Load(write(c.eps), "", 0)
			checkErr(t, fx.name+" "+key, err, c.want, "config.json")
		}
		// Python's json writes NaN and Infinity, which JSON lacks: such a file does not parse.
		for _, bad := range []string{"NaN", "Infinity", "-Infinity"} {
			dir := write("PLACEHOLDER")
			path := filepath.Join(dir, "config.json")
			data, _ := os.ReadFile(path)
			os.WriteFile(path, []byte(strings.Replace(string(data), `"PLACEHOLDER"`, bad, 1)), 0o644)
			_, err := engine.Load(dir, "", 0)
			checkErr(t, fx.name+" "+key+" "+bad, err, "parsing "+path, "invalid character")
		}
		e, err := engine.Load(write(fx.config[key]), "", 0)
		if err != nil {
			t.Fatalf("%s as written: %v", fx.name, err)
		}
		if got := e.Model.Config.NormEps; got != fx.config[key] {
			t.Errorf("%s: norm_eps %v; want %v", fx.name, got, fx.config[key])
		}
	}
}

// A named pipe as model.safetensors, a shard or config.json would block open(2) for ever:
// refused at once.
func TestFIFORefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("named pipes are made with mkfifo(2) here")
	}
	fx := llamaFixture("llama", false)
	w := randomWeights(rand.New(rand.NewPCG(5, 5)), fx.specs)
	for _, c := range []struct {
		name   string
		shards int
	}{{"model.safetensors", 1}, {"model-00002-of-00002.safetensors", 2}, {"model.safetensors.index.json", 2}, {"config.json", 1}} {
		dir := filepath.Join(t.TempDir(), "m")
		writeHF(t, dir, fx.config, fx.specs, w, "F32", c.shards)
		path := filepath.Join(dir, c.name)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := engine.Load(dir, "", 0)
			done <- err
		}()
		select {
		case err := <-done:
			checkErr(t, c.name, err, "open "+path+": is a named pipe (FIFO), not a regular file")
		case <-time.After(10 * time.Second):
			t.Fatalf("loading %s as a named pipe blocked", c.name)
		}
	}
}

// FuzzReadConfig feeds a Hugging Face config.json arbitrary bytes, seeded with each family's
// config and the hostile norm epsilons of TestNormEpsRefused: it is refused with a one-line
// error, or translated into a valid Config whose norm epsilon is in (0, models.MaxNormEps].
//
//	go test ./models/hf -run '^$' -fuzz FuzzReadConfig -fuzztime 30s
func FuzzReadConfig(f *testing.F) {
	for key, fx := range map[string]fixture{"rms_norm_eps": llamaFixture("llama", false), "layer_norm_epsilon": gpt2Fixture(""), "layer_norm_eps": bertFixture(false)} {
		for _, eps := range []any{fx.config[key], -1, 0, 2, "PLACEHOLDER"} {
			config := map[string]any{}
			for k, v := range fx.config {
				config[k] = v
			}
			config[key] = eps
			data, err := json.Marshal(config)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(bytes.Replace(data, []byte(`"PLACEHOLDER"`), []byte("NaN"), 1))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := hf.ReadConfig(dir)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if !(cfg.NormEps > 0 && cfg.NormEps <= models.MaxNormEps) {
			t.Fatalf("ReadConfig accepted a norm epsilon of %v", cfg.NormEps)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ReadConfig returned a config Validate refuses: %v", err)
		}
	})
}
