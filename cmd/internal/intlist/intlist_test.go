package intlist

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	positive := func(v int) bool { return v >= 1 }
	for _, c := range []struct {
		s     string
		valid func(int) bool
		want  []int
		bad   string
	}{
		{"5,17,300", nil, []int{5, 17, 300}, ""},
		{" 1, 2 ,3", positive, []int{1, 2, 3}, ""},
		{"-4,0", nil, []int{-4, 0}, ""},
		{"7", positive, []int{7}, ""},
		{"1,0,2", positive, nil, "0"},
		{"1, x,2", nil, nil, " x"},
		{"1,,2", nil, nil, ""},
		{"", nil, nil, ""},
		{"1.5", nil, nil, "1.5"},
	} {
		got, bad, ok := Parse(c.s, c.valid)
		if wantOK := c.want != nil; ok != wantOK || bad != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) = %v, %q, %v; want %v, %q, %v", c.s, got, bad, ok, c.want, c.bad, wantOK)
		}
	}
}
