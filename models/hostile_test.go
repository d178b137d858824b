package models

// Configurations and files that describe no sane model: a norm epsilon that is not a small
// positive number, a named pipe in place of a checkpoint file. Each is refused with a
// one-line error; the hostile files of the other formats are in their packages' tests.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

func TestNormEpsValidated(t *testing.T) {
	for _, eps := range []float64{-1, math.NaN(), math.Inf(1), math.Inf(-1), -1e-5, 1.5} {
		cfg := testConfig()
		cfg.Defaults()
		cfg.NormEps = eps
		want := fmt.Sprintf("config: norm_eps is %v: a norm epsilon must be positive, finite and at most 1", eps)
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("norm_eps %v: %v; want %q", eps, err, want)
		}
		if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("New with norm_eps %v: %v; want %q", eps, err, want)
		}
	}
	for _, eps := range []float64{1e-5, 1e-6, 1e-12, 1} {
		cfg := testConfig()
		cfg.Defaults()
		cfg.NormEps = eps
		if err := cfg.Validate(); err != nil {
			t.Errorf("norm_eps %v: %v", eps, err)
		}
	}
	if err := CheckNormEps("rms_norm_eps", 0); err == nil || err.Error() != "rms_norm_eps is 0: a norm epsilon must be positive, finite and at most 1 (models use 1e-5, 1e-6 or 1e-12)" {
		t.Errorf("CheckNormEps(0) = %v", err)
	}
}

// writeConfigJSON writes a checkpoint directory's config.json as testConfig with norm_eps
// spelled as given (JSON text, so that NaN and overflowing numbers can be written).
func writeConfigJSON(t *testing.T, normEps string) string {
	t.Helper()
	dir := writeCheckpoint(t, testConfig())
	path := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, `"norm_eps": `)
	j := i + strings.Index(text[i:], ",")
	if i < 0 || j < i {
		t.Fatalf("no norm_eps in %s", text)
	}
	if err := os.WriteFile(path, []byte(text[:i]+`"norm_eps": `+normEps+text[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestNormEpsInConfigJSON(t *testing.T) {
	backend, _ := simplego.New("ops_sequential")
	for _, c := range []struct{ eps, want string }{
		{"-1", "config: norm_eps is -1: a norm epsilon must be positive, finite and at most 1"},
		{"-0.00001", "config: norm_eps is -1e-05: a norm epsilon must be positive"},
		{"1e300", "config: norm_eps is 1e+300: a norm epsilon must be positive, finite and at most 1"},
		{"NaN", "invalid character 'N'"},           // JSON has no NaN: the file does not parse
		{"1e999", "cannot unmarshal number 1e999"}, // nor an infinity
	} {
		dir := writeConfigJSON(t, c.eps)
		_, _, err := Load(dir, backend)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(dir, ConfigFile)) || strings.Contains(err.Error(), "\n") {
			t.Errorf("norm_eps %s: %v; want one line naming %s and %q", c.eps, err, ConfigFile, c.want)
		}
	}
	// 0 is the field's zero value, written by configs that leave it unset (weights/rope-decoder
	// has "norm_eps": 0): it means the default, 1e-5.
	m, _, err := Load(writeConfigJSON(t, "0"), backend)
	if err != nil || m.Config.NormEps != 1e-5 {
		t.Errorf("norm_eps 0: %v; want the default 1e-5", err)
	}
}

// loadWithin runs load and fails the test if it has not returned after a few seconds.
func loadWithin(t *testing.T, load func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the load blocked")
		return nil
	}
}

// A named pipe as model.safetensors or config.json would block open(2) for ever: refused.
func TestFIFORefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("named pipes are made with mkfifo(2) here")
	}
	backend, _ := simplego.New("ops_sequential")
	for _, name := range []string{WeightsFile, ConfigFile} {
		dir := writeCheckpoint(t, testConfig())
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		err := loadWithin(t, func() error {
			f, err := FormatOf(dir)
			if err != nil {
				return err
			}
			_, err = f.Load(dir, backend, context.New())
			return err
		})
		want := "open " + path + ": is a named pipe (FIFO), not a regular file: a checkpoint file must be a regular file"
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s a named pipe: %v; want one line with %q", name, err, want)
		}
	}
}

// FuzzReadConfig feeds config.json arbitrary bytes, seeded with the hostile norm epsilons above:
// a config is refused with a one-line error, or valid, its norm epsilon in (0, MaxNormEps].
//
//	go test ./models -run '^$' -fuzz FuzzReadConfig -fuzztime 30s
func FuzzReadConfig(f *testing.F) {
	good, err := json.Marshal(testConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, eps := range []string{"-1", "0", "NaN", "1e999", "-0", "2", "1e-300"} {
		bad := bytes.Replace(good, []byte(`"norm_eps":0,`), []byte(`"norm_eps":`+eps+`,`), 1)
		if bytes.Equal(bad, good) && eps != "0" {
			f.Fatalf("no norm_eps in %s", good)
		}
		f.Add(bad)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ConfigFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := ReadConfig(dir)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
			return
		}
		if !(cfg.NormEps > 0 && cfg.NormEps <= MaxNormEps) {
			t.Fatalf("ReadConfig accepted norm_eps %v", cfg.NormEps)
		}
	})
}
