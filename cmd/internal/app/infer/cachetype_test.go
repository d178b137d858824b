package infer

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// -ctk and -ctv (and their long names) set the KV cache's types; the shipped decoder generates
// with a half cache; a type the backend cannot hold, or an unknown one, is refused in one line
// with exit 2.
func TestCacheTypeFlags(t *testing.T) {
	o, _, err := parse([]string{"-ctk", "f16", "--cache-type-v", "bf16"}, &bytes.Buffer{})
	if err != nil || o.cache.K != dtypes.Float16 || o.cache.V != dtypes.BFloat16 {
		t.Fatalf("-ctk f16 --cache-type-v bf16: %+v, %v", o.cache, err)
	}
	var help bytes.Buffer
	if _, h, _ := parse([]string{"-h"}, &help); !h || !strings.Contains(help.String(), "-ctk, --cache-type-k type") {
		t.Errorf("-h does not list -ctk with its long name:\n%s", help.String())
	}
	model := testModel
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-ctk", "f16", "-ctv", "f16"}, 0, ""},
		{[]string{"-ctk", "bf16", "--backend", "go"}, 0, ""},
		{[]string{"-ctk", "f16", "--backend", "go"}, 2, "cannot hold a KV cache of Float16"},
		{[]string{"-ctv", "q4_0"}, 2, "unknown KV cache type \"q4_0\"; use one of bf16, f16, f32"},
	} {
		var stderr bytes.Buffer
		code := Run(append([]string{"-m", model, "-n", "8", "--temp", "0"}, c.args...), strings.NewReader(""), io.Discard, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.msg) || (c.code != 0 && strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", c.args, code, stderr.String(), c.code, c.msg)
		}
	}
}
