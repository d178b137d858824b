package server

// End to end with OpenAI's official Node client (the openai npm package): the test builds the
// command, starts it twice on 127.0.0.1 (the shipped decoder and the shipped encoder, each on a
// free port), installs the client into a cache folder outside the repository, and runs
// e2e/test.mjs against them with the answers the Go engine gives on its own. It is skipped,
// saying why, in -short mode, without node or npm, or when the npm registry cannot be reached.
// POSFORMER_OPENAI_MODULES names a folder whose node_modules holds the client already.

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/posformer/posformer/engine/serve"
	"github.com/posformer/posformer/tokenizer/chat"
)

// openaiVersion is the client the script runs with, pinned so that a new release cannot change
// the test under us; it must match e2e/package.json.
const openaiVersion = "6.30.1"

func TestOpenAIClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skips npm install of the openai client and the end-to-end run against the server; run it with go test ./cmd/serve/server -run TestOpenAIClient")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: end-to-end test with OpenAI's Node client skipped", tool)
		}
	}
	dir := installClient(t)

	bin := filepath.Join(t.TempDir(), "serve")
	build := exec.Command("go", "build", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/serve: %v: %s", err, out)
	}
	decoderURL := startProcess(t, bin, "-m", decoderPath, "--parallel", "2")
	encoderURL := startProcess(t, bin, "-m", encoderPath)

	expect := e2eExpectations(t)
	data, err := json.Marshal(expect)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "test.mjs")
	node.Dir = dir
	node.Env = append(os.Environ(), "POSFORMER_DECODER_URL="+decoderURL+"/v1", "POSFORMER_ENCODER_URL="+encoderURL+"/v1", "POSFORMER_EXPECT="+string(data))
	out, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("node test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

// installClient puts package.json and test.mjs into a cache folder and installs the client
// there (once: later runs find it), returning the folder; it skips the test when npm cannot.
func installClient(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("POSFORMER_OPENAI_MODULES")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir = filepath.Join(cache, "posformer", "serve-e2e")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "test.mjs"} {
		data, err := os.ReadFile(filepath.Join("e2e", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var installed struct{ Version string }
	if data, err := os.ReadFile(filepath.Join(dir, "node_modules", "openai", "package.json")); err == nil && json.Unmarshal(data, &installed) == nil && installed.Version == openaiVersion {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Few, short retries: offline, npm's defaults wait over a minute before giving up.
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error",
		"--fetch-retries=1", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=5000")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm install openai@%s failed (is the npm registry reachable?): end-to-end test skipped: %v: %s", openaiVersion, err, firstLine(string(out)))
	}
	return dir
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// startProcess runs the built command on a free port of 127.0.0.1 and returns its base URL;
// at the end of the test it sends SIGTERM and expects a clean exit.
func startProcess(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--host", "127.0.0.1", "--port", "0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s %v after SIGTERM: %v", bin, args, err)
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("%s %v did not exit after SIGTERM", bin, args)
		}
	})
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		exited <- cmd.Wait()
	}()
	addr := regexp.MustCompile(`listening on (http://\S+)`)
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line := <-lines:
			if m := addr.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		case <-timeout:
			t.Fatalf("%s %v did not start listening", bin, args)
		}
	}
}

// e2eExpectations are the script's requests and the answers the Go engine gives on its own.
func e2eExpectations(t *testing.T) map[string]any {
	t.Helper()
	ref := newReference(t)
	sp := testOptions(t, decoderPath).config().defaults
	sp.Temp = 0
	prompt := "func (b *Buffer) Write(p []byte) (n int, err error) {\n"
	ids, err := ref.m.encodePrompt(prompt)
	if err != nil {
		t.Fatal(err)
	}
	text, n, finish := ref.generate(t, ids, 40, sp, ref.m.stop)
	msgs := []chat.Message{{Role: "system", Content: "You write Go."}, {Role: "user", Content: "A function that reverses a string:"}}
	chatIDs, err := ref.m.encodeChat(msgs)
	if err != nil {
		t.Fatal(err)
	}
	chatText, chatN, chatFinish := ref.generate(t, chatIDs, 30, sp, ref.m.stop)

	enc := loadTestModel(t, encoderPath, true)
	input := "for i := range n {"
	rows := [][]int{tokens(enc, input), tokens(enc, "another input")}
	vecs, err := serve.NewEmbedder(enc.e, 1).Embed(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"decoder_id": "rope-decoder", "encoder_id": "sinusoidal-encoder", "context": ref.m.e.Capacity,
		"completion": map[string]any{"prompt": prompt, "max_tokens": 40, "text": text, "finish_reason": finish, "completion_tokens": n},
		"chat": map[string]any{"messages": []map[string]string{{"role": "system", "content": msgs[0].Content}, {"role": "user", "content": msgs[1].Content}},
			"max_tokens": 30, "text": chatText, "finish_reason": chatFinish, "completion_tokens": chatN},
		"embedding": map[string]any{"input": input, "vector": vecs[0], "tokens": len(rows[0]) + len(rows[1])},
	}
}
