package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
	"testing"
)

func decode(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	return img
}

// A figure is as large as its grid: rows wrap at MaxCols, and a new entry of Rows starts a row.
func TestFigureSize(t *testing.T) {
	hm := Heatmap{Title: "h", Z: [][]float64{{0, 1}, {2, 3}}}
	ln := Lines{Title: "l", Series: []Series{{Label: "a", X: []float64{0, 1, 2}, Y: []float64{1, 0, 1}}}}
	data, err := Figure{Title: "t", Rows: [][]Panel{{hm, hm, hm}, {ln}}, CellWidth: 200, CellHeight: 150, MaxCols: 2}.PNG()
	if err != nil {
		t.Fatal(err)
	}
	b := decode(t, data).Bounds()
	if b.Dx() != 2*200 || b.Dy() != 3*150+30 {
		t.Errorf("image is %dx%d, want %dx%d (2 columns, 3 rows, title)", b.Dx(), b.Dy(), 400, 3*150+30)
	}
}

// Row 0 of the matrix is drawn at the top; with a diverging scale, positive cells are red and
// negative ones blue.
func TestHeatmapOrientationAndColours(t *testing.T) {
	z := [][]float64{{1, 1, 1}, {-1, -1, -1}, {-1, -1, -1}}
	data, err := Figure{Rows: [][]Panel{{Heatmap{Z: z, Diverging: true}}}}.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, data)
	b := img.Bounds()
	x := b.Dx() * 2 / 5 // inside the heatmap, left of the colour bar
	redSum, redN, blueSum, blueN := 0, 0, 0, 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		r, _, bl, _ := img.At(x, y).RGBA()
		switch {
		case r > bl+0x4000:
			redSum, redN = redSum+y, redN+1
		case bl > r+0x4000:
			blueSum, blueN = blueSum+y, blueN+1
		}
	}
	if redN == 0 || blueN == 0 {
		t.Fatalf("column %d has %d red and %d blue pixels", x, redN, blueN)
	}
	if redSum/redN >= blueSum/blueN {
		t.Errorf("positive row 0 is drawn below the negative rows (mean y %d vs %d)", redSum/redN, blueSum/blueN)
	}
	if ratio := float64(blueN) / float64(redN); math.Abs(ratio-2) > 0.2 {
		t.Errorf("blue/red rows = %.2f, want 2 (two negative rows, one positive)", ratio)
	}
}

// A red-to-green heatmap on a fixed 0..1 scale: a row of 1s is green and a row of 0.5s yellow
// whatever the matrix's own range (a scale fitted to it would make 0.5 its red end), and the
// ramp itself runs red, yellow, green.
func TestHeatmapRedToGreenFixedScale(t *testing.T) {
	z := [][]float64{{1, 1}, {0.5, 0.5}}
	data, err := Figure{Rows: [][]Panel{{Heatmap{Z: z, RedToGreen: true, ZMin: 0, ZMax: 1, XTicks: []string{"1", "2"}, YTicks: []string{"a", "b"}}}}}.PNG()
	if err != nil {
		t.Fatal(err)
	}
	img := decode(t, data)
	b := img.Bounds()
	x := b.Dx() * 2 / 5
	green, yellow := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		r, g, bl, _ := img.At(x, y).RGBA()
		switch {
		case g > r+0x4000 && g > bl+0x4000:
			green++
		case r > 0xe000 && g > 0xd000 && bl < 0xa000:
			yellow++
		}
	}
	if green < 50 || yellow < 50 {
		t.Errorf("column %d: %d green and %d yellow pixels, want a row of each", x, green, yellow)
	}
	cm := &ramp{stops: redYellowGreen, alpha: 1}
	cm.SetMin(0)
	cm.SetMax(1)
	for _, c := range []struct {
		v    float64
		want color.RGBA
	}{{0, redYellowGreen[0]}, {0.5, redYellowGreen[1]}, {1, redYellowGreen[2]}} {
		if got, err := cm.At(c.v); err != nil || got != c.want {
			t.Errorf("ramp at %v: %v, %v; want %v", c.v, got, err, c.want)
		}
	}
	if _, err := cm.At(1.5); err == nil {
		t.Error("ramp at 1.5 (above its max) gave no error")
	}
	if _, err := (Figure{Rows: [][]Panel{{Heatmap{Z: z, XTicks: []string{"1"}}}}}).PNG(); err == nil || !strings.Contains(err.Error(), "tick labels") {
		t.Errorf("one tick label for two columns: %v", err)
	}
}

// Constant and fully masked matrices still draw; bad input is an error, not a panic.
func TestHeatmapEdgeCases(t *testing.T) {
	nan := math.NaN()
	for _, z := range [][][]float64{{{3, 3}, {3, 3}}, {{nan, nan}}, {{0}}} {
		if _, err := (Figure{Rows: [][]Panel{{Heatmap{Z: z}}}}).PNG(); err != nil {
			t.Errorf("%v: %v", z, err)
		}
	}
	for _, c := range []struct {
		p    Panel
		want string
	}{
		{Heatmap{Title: "e"}, "empty"},
		{Heatmap{Title: "r", Z: [][]float64{{1, 2}, {3}}}, "rows of"},
		{Lines{Series: []Series{{Label: "s", X: []float64{1}, Y: nil}}}, "x and"},
	} {
		_, err := Figure{Rows: [][]Panel{{c.p}}}.PNG()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error mentioning %q, got %v", c.want, err)
		}
	}
	if _, err := (Figure{}).PNG(); err == nil {
		t.Error("an empty figure gave no error")
	}
}

// Log-2 ticks fall on the powers of two inside the range, and a log axis refuses x <= 0.
func TestLogXTicksAndErrors(t *testing.T) {
	var got []float64
	for _, tk := range (log2Ticks{}).Ticks(48, 1024) {
		got = append(got, tk.Value)
	}
	want := []float64{64, 128, 256, 512, 1024}
	if len(got) != len(want) {
		t.Fatalf("ticks %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ticks %v, want %v", got, want)
		}
	}
	ok := Lines{LogX: true, Marks: []float64{64}, YMin: 0, YMax: 1, Series: []Series{{Label: "a", X: []float64{64, 256}, Y: []float64{0.2, 2}, Style: 9}}}
	if _, err := (Figure{Rows: [][]Panel{{ok}}}).PNG(); err != nil {
		t.Errorf("log x, mark, clipped y, style 9: %v", err)
	}
	bad := Lines{LogX: true, Series: []Series{{Label: "a", X: []float64{0, 1}, Y: []float64{1, 1}}}}
	if _, err := (Figure{Rows: [][]Panel{{bad}}}).PNG(); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("x = 0 on a log axis: %v", err)
	}
}

// Log-10 ticks label 1, 2 and 5 times the powers of ten over a wide range; a range under a
// decade, where few of those fall, still gets at least three numbers.
func TestLogYTicks(t *testing.T) {
	labels := func(min, max float64) []string {
		var out []string
		for _, tk := range (log10Ticks{}).Ticks(min, max) {
			if tk.Label != "" {
				if tk.Value < min || tk.Value > max {
					t.Errorf("range [%g, %g]: tick %g outside", min, max, tk.Value)
				}
				out = append(out, tk.Label)
			}
		}
		return out
	}
	if got, want := strings.Join(labels(0.0004, 3), " "), "0.0005 0.001 0.002 0.005 0.01 0.02 0.05 0.1 0.2 0.5 1 2"; got != want {
		t.Errorf("wide range: labels %q, want %q", got, want)
	}
	if got := labels(1.18, 3.1); len(got) < 3 {
		t.Errorf("range [1.18, 3.1]: labels %q, want three or more", got)
	}
}

// Error bars are drawn in the series' colour: with a bar at x = 8 from 0.2 to 0.8 on a flat line
// at 0.5, the column through x = 8 has coloured pixels well above and below the line, and a
// series without intervals has none there.
func TestErrorBars(t *testing.T) {
	draw := func(lo, hi []float64, colour color.Color) image.Image {
		ln := Lines{Series: []Series{{X: []float64{1, 8, 15}, Y: []float64{0.5, 0.5, 0.5}, Lo: lo, Hi: hi, Colour: colour}}, YMin: 0, YMax: 1}
		data, err := Figure{Rows: [][]Panel{{ln}}, CellWidth: 400, CellHeight: 400}.PNG()
		if err != nil {
			t.Fatal(err)
		}
		return decode(t, data)
	}
	span := func(img image.Image) int {
		b := img.Bounds()
		best := 0
		for x := b.Min.X; x < b.Max.X; x++ {
			n := 0
			for y := b.Min.Y; y < b.Max.Y; y++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				if bl > r+0x3000 && bl > g+0x1800 { // the first series colour is tab10's blue
					n++
				}
			}
			best = max(best, n)
		}
		return best
	}
	bar := [][]float64{{0.5, 0.2, 0.5}, {0.5, 0.8, 0.5}}
	with := span(draw(bar[0], bar[1], nil))
	without := span(draw(nil, nil, nil))
	grey := span(draw(bar[0], bar[1], color.Gray{Y: 0x70}))
	if with < 100 || without > 10 || grey > 10 {
		t.Errorf("tallest blue column: %d px with a bar spanning 60%% of a ~300 px axis, %d without, %d in grey", with, without, grey)
	}
	if _, err := (Figure{Rows: [][]Panel{{Lines{Series: []Series{{X: []float64{1}, Y: []float64{1}, Lo: []float64{0, 1}, Hi: []float64{2}}}}}}}).PNG(); err == nil || !strings.Contains(err.Error(), "interval ends") {
		t.Errorf("mismatched interval lengths: %v", err)
	}
}
