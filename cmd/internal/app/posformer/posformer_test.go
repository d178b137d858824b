package posformer

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The dispatch itself, in process: the version, an unknown command, a command's alias.
func TestDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "posformer ") {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
	out.Reset()
	if code := Main([]string{"nosuch"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "nosuch"`) {
		t.Errorf("an unknown command: exit %d, stderr %q", code, errb.String())
	}
	if code := Main(nil, &out, &errb); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
	for alias, name := range map[string]string{"infer": "run", "ls": "list", "chat": "chat"} {
		if c, ok := find(alias); !ok || c.name != name {
			t.Errorf("find(%q) = %q, %v; want %q", alias, c.name, ok, name)
		}
	}
}

// installed builds the command as `go install` would, into a temporary GOBIN, and returns
// its path and an environment whose home and cache directories are empty temporary ones.
func installed(t *testing.T) (bin string, env []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skips go install of the posformer binary and running it (about 10 s); run it with go test ./cmd/internal/app/posformer")
	}
	gobin := t.TempDir()
	install := exec.Command("go", "install", "github.com/posformer/posformer/cmd/posformer")
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "POSFORMER_HOME=", "GOMLX_BACKEND=")
	return filepath.Join(gobin, "posformer"), env
}

// run runs the binary in an empty directory: nothing but what it carries.
func run(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = t.TempDir(), env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// The installed binary, from an empty directory with empty home and cache directories: it
// generates with its built-in decoder, says its version, lists a model copied into
// $POSFORMER_HOME and runs it by name, and trains on a file, refusing a second run into the
// same folder without -resume or -force.
func TestInstalledBinary(t *testing.T) {
	bin, env := installed(t)
	if info, err := os.Stat(bin); err == nil {
		t.Logf("posformer binary: %.1f MB", float64(info.Size())/1e6)
	}

	out, stderr, code := run(t, bin, env, "run", "-p", "func main() {", "-n", "16", "--seed", "1")
	if code != 0 || !strings.HasPrefix(out, "func main() {") || len(out) <= len("func main() {\n") {
		t.Errorf("run: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if !strings.Contains(stderr, "decode") {
		t.Errorf("run: no summary line on stderr: %q", stderr)
	}

	// XLA is linked into the program (never into the libraries and their tests): without a PJRT
	// plugin it says which one is missing and how to get one.
	_, stderr, code = run(t, bin, env, "run", "--backend", "xla:cpu", "-p", "x", "-n", "1")
	if code == 0 || !strings.Contains(stderr, `no PJRT "cpu" plugin installed`) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("run --backend xla:cpu: exit %d, stderr %q; want one line naming the missing plugin", code, stderr)
	}

	out, _, code = run(t, bin, env, "--version")
	if code != 0 || !strings.HasPrefix(out, "posformer ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d, %q", code, out)
	}

	home := t.TempDir()
	copyDir(t, "../../../../weights/rope-decoder", filepath.Join(home, "mine"))
	withHome := append(append([]string(nil), env...), "POSFORMER_HOME="+home)
	out, stderr, code = run(t, bin, withHome, "list")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	var row []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "mine" {
			row = f
		}
	}
	// NAME FORMAT SIZE(2 fields) PARAMETERS SCHEME; the shipped decoder has 330K parameters
	// (3 blocks of dim 96, a 260-token tied embedding; weights/README.md).
	if len(row) != 6 || row[1] != "posformer" || row[3] != "MB" || !strings.HasSuffix(row[4], "K") || row[5] != "rope" {
		t.Errorf("list: the row of the copied model is %q in\n%s", row, out)
	}
	if out, stderr, code = run(t, bin, withHome, "run", "-m", "mine", "-p", "x", "-n", "2"); code != 0 {
		t.Errorf("run -m mine: exit %d: %s %s", code, out, stderr)
	}

	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog.\n"), 40), 0o644); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "X")
	args := []string{"train", "-data", text, "-steps", "5", "-o", ckpt, "-dim", "16", "-layers", "1", "-heads", "2", "-kv-heads", "1",
		"-hidden", "32", "-seq", "32", "-batch", "2", "-eval-every", "5", "-save-every", "5", "-eval-windows", "2"}
	if _, stderr, code = run(t, bin, env, args...); code != 0 {
		t.Fatalf("train -data: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(ckpt, "model.safetensors")); err != nil {
		t.Fatalf("train -data wrote no checkpoint: %v", err)
	}
	_, stderr, code = run(t, bin, env, args...)
	if code == 0 || !strings.Contains(stderr, "-resume") || !strings.Contains(stderr, "-force") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("a second train into %s: exit %d, stderr %q; want one line naming -resume and -force", ckpt, code, stderr)
	}
}

// A conversation through the binary: two turns on standard input, then Ctrl-D.
func TestInstalledChat(t *testing.T) {
	bin, env := installed(t)
	cmd := exec.Command(bin, "chat", "-n", "4", "--seed", "1")
	cmd.Dir, cmd.Env = t.TempDir(), env
	cmd.Stdin = strings.NewReader("func main() {\nx := 1\n")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("chat: %v: %s", err, e.String())
	}
	if !strings.Contains(e.String(), "2 turns") {
		t.Errorf("chat: stderr %q, want a summary of 2 turns", e.String())
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "model.safetensors"} {
		data, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// `go install` works on other systems than this one: the program builds for macOS and Windows
// (without cgo, as a cross-compilation goes; the XLA backend then answers with its message).
// Linux-only calls (arch_prctl, getrusage, signal 0) each sit behind their own build tags.
func TestBuildsForOtherSystems(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips building the program for macOS and Windows (about a minute from a cold cache); run it with go test ./cmd/internal/app/posformer")
	}
	for _, goos := range []string{"darwin", "windows"} {
		build := exec.Command("go", "build", "-o", os.DevNull, "github.com/posformer/posformer/cmd/posformer")
		build.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s go build ./cmd/posformer: %v\n%s", goos, err, out)
		}
	}
}
