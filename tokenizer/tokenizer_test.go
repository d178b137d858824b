package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

func TestEncodeWithMaskByte(t *testing.T) {
	ids, maskAt, err := EncodeWithMask(NewByte(), "a<mask>b")
	if err != nil {
		t.Fatalf("EncodeWithMask: %v", err)
	}
	if want := []int{97, 259, 98}; !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	if want := []int{1}; !slices.Equal(maskAt, want) {
		t.Fatalf("maskAt = %v, want %v", maskAt, want)
	}
}

func TestEncodeWithMaskEdges(t *testing.T) {
	// Masks at both ends and back to back.
	ids, maskAt, err := EncodeWithMask(NewByte(), "<mask>x<mask><mask>")
	if err != nil {
		t.Fatalf("EncodeWithMask: %v", err)
	}
	if want := []int{259, 'x', 259, 259}; !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	if want := []int{0, 2, 3}; !slices.Equal(maskAt, want) {
		t.Fatalf("maskAt = %v, want %v", maskAt, want)
	}
}

// noMask is a Tokenizer without a mask token.
type noMask struct{ Byte }

func (noMask) Special() Specials { return Specials{BOS: -1, EOS: -1, PAD: -1, MASK: -1} }

func TestEncodeWithMaskNeedsMaskToken(t *testing.T) {
	_, _, err := EncodeWithMask(noMask{}, "a<mask>b")
	if err == nil || !strings.Contains(err.Error(), "no mask token") {
		t.Fatalf("err = %v, want an error about the missing mask token", err)
	}
}

func TestLoadByte(t *testing.T) {
	tk, err := Load("byte")
	if err != nil {
		t.Fatalf("Load(\"byte\"): %v", err)
	}
	if _, ok := tk.(*Byte); !ok {
		t.Fatalf("Load(\"byte\") = %T, want *Byte", tk)
	}
}

func TestLoadUnknown(t *testing.T) {
	_, err := Load("nope")
	if err == nil {
		t.Fatal("Load(\"nope\") succeeded, want error")
	}
	msg := err.Error()
	for _, want := range []string{"nope", `"byte"`, "tokenizer.json"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %s", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q spans several lines", msg)
	}
}

func TestLoadHFPath(t *testing.T) {
	tk, err := Load("testdata/bpe.json")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if _, ok := tk.(*HF); !ok {
		t.Fatalf("Load(path) = %T, want *HF", tk)
	}
}
