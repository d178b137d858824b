// Package plot draws the project's figures as PNG images: heatmaps of matrices and line plots,
// laid out in a grid of panels under a title. It wraps gonum.org/v1/plot so that commands
// (cmd/pe, the benchmarks) describe what to draw, not how.
//
//	png, err := plot.Figure{Title: "rope", Rows: [][]plot.Panel{{heat0, heat1}, {lines}}}.PNG()
package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"

	gp "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Panel is one cell of a Figure: a Heatmap or Lines.
type Panel interface {
	draw(c draw.Canvas) error
}

// Figure is a grid of panels. Each entry of Rows starts a new row, wrapped at MaxCols panels.
type Figure struct {
	Title      string
	Rows       [][]Panel
	CellWidth  int // pixels per panel; 0 means 400
	CellHeight int // 0 means 340
	MaxCols    int // 0 means 4
}

const dpi = 96

// px converts pixels to vg lengths at the figure's resolution.
func px(n float64) vg.Length { return vg.Length(n) * vg.Inch / dpi }

// PNG renders the figure and encodes it as PNG.
func (f Figure) PNG() ([]byte, error) {
	cw, ch, maxCols := orDefault(f.CellWidth, 400), orDefault(f.CellHeight, 340), orDefault(f.MaxCols, 4)
	var grid [][]Panel
	for _, row := range f.Rows {
		for len(row) > maxCols {
			grid, row = append(grid, row[:maxCols]), row[maxCols:]
		}
		if len(row) > 0 {
			grid = append(grid, row)
		}
	}
	if len(grid) == 0 {
		return nil, fmt.Errorf("plot: nothing to draw")
	}
	cols := 0
	for _, row := range grid {
		cols = max(cols, len(row))
	}
	titleH := 0.0
	sty := text.Style{Color: color.Black, Font: font.From(gp.DefaultFont, 14), XAlign: draw.XCenter, YAlign: draw.YTop, Handler: gp.DefaultTextHandler}
	w := float64(cols * cw)
	if f.Title != "" {
		titleH = 30
		// A one-panel figure must still be wide enough for its title.
		w = max(w, math.Ceil(float64(sty.Width(f.Title)/px(1)))+20)
	}
	h := float64(len(grid)*ch) + titleH
	img := vgimg.NewWith(vgimg.UseWH(px(w), px(h)), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	c := draw.New(img)
	if f.Title != "" {
		c.FillText(sty, vg.Point{X: px(w / 2), Y: px(h - 6)}, f.Title)
	}
	for r, row := range grid {
		for i, p := range row {
			// vg's y axis points up: row 0 is at the top, below the title.
			top := h - titleH - float64(r*ch)
			cell := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: px(float64(i * cw)), Y: px(top - float64(ch))},
				Max: vg.Point{X: px(float64((i + 1) * cw)), Y: px(top)},
			}}
			if err := p.draw(cell); err != nil {
				return nil, err
			}
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot: encoding png: %w", err)
	}
	return buf.Bytes(), nil
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Heatmap draws a matrix, row 0 at the top as it is printed, with a colour bar.
type Heatmap struct {
	Title, XLabel, YLabel string
	Z                     [][]float64 // Z[row][col]; NaN cells (masked) are drawn light grey
	// Diverging centres the colour scale on 0 (blue below, red above), for signed values;
	// otherwise the scale runs dark to light from the minimum to the maximum.
	Diverging bool
	// RedToGreen colours a score (an accuracy) from red at the low end through yellow to green,
	// as needle-in-a-haystack grids do; the default's light end vanishes on the white page.
	RedToGreen bool
	// ZMin, ZMax fix the colour scale when ZMax > ZMin (an accuracy's 0 to 1, the same in every
	// panel of a figure); values outside take the nearest end.
	ZMin, ZMax float64
	// XTicks and YTicks, when set, label the columns and rows (one label each, "" for none)
	// instead of their indices.
	XTicks, YTicks []string
}

// Pixel widths of a heatmap's colour bar, of the gap between it and the heatmap, and of the
// margin that keeps it off the next panel.
const colourBarWidth, colourBarGap, colourBarMargin = 16, 10, 12

var maskedColour = color.Gray{Y: 0xd8}

func (hm Heatmap) draw(c draw.Canvas) error {
	rows := len(hm.Z)
	if rows == 0 || len(hm.Z[0]) == 0 {
		return fmt.Errorf("plot: heatmap %q is empty", hm.Title)
	}
	cols := len(hm.Z[0])
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range hm.Z {
		if len(row) != cols {
			return fmt.Errorf("plot: heatmap %q has rows of %d and %d values", hm.Title, cols, len(row))
		}
		for _, v := range row {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if lo > hi { // every cell masked
		lo, hi = 0, 1
	}
	if hm.ZMax > hm.ZMin {
		lo, hi = hm.ZMin, hm.ZMax
	}
	var cm palette.ColorMap
	if hm.Diverging {
		a := max(math.Abs(lo), math.Abs(hi))
		lo, hi = -a, a
		cm = moreland.SmoothBlueRed()
	} else if hm.RedToGreen {
		cm = &ramp{stops: redYellowGreen, alpha: 1}
	} else {
		cm = moreland.ExtendedBlackBody()
	}
	if hi-lo < 1e-12*max(1, math.Abs(hi)) { // a constant matrix still gets a colour scale
		lo, hi = lo-0.5, hi+0.5
	}
	cm.SetMin(lo)
	cm.SetMax(hi)

	// Each cell becomes a block of pixels: the canvas scales images bilinearly, which would
	// blur the cells of a small matrix into each other.
	fx, fy := max(1, 512/cols), max(1, 512/rows)
	img := image.NewRGBA(image.Rect(0, 0, cols*fx, rows*fy))
	for i, row := range hm.Z {
		for j, v := range row {
			var col color.Color = maskedColour
			if !math.IsNaN(v) {
				col, _ = cm.At(min(max(v, lo), hi))
			}
			for y := i * fy; y < (i+1)*fy; y++ {
				for x := j * fx; x < (j+1)*fx; x++ {
					img.Set(x, y, col)
				}
			}
		}
	}

	p := gp.New()
	p.Title.Text = hm.Title
	p.X.Label.Text, p.Y.Label.Text = hm.XLabel, hm.YLabel
	p.Y.Scale = gp.InvertedScale{Normalizer: gp.LinearScale{}}
	p.Add(raster{img: img, cols: cols, rows: rows})
	p.X.Min, p.X.Max = -0.5, float64(cols)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(rows)-0.5
	for _, ax := range []struct {
		axis   *gp.Axis
		labels []string
		n      int
	}{{&p.X, hm.XTicks, cols}, {&p.Y, hm.YTicks, rows}} {
		if ax.labels == nil {
			continue
		}
		if len(ax.labels) != ax.n {
			return fmt.Errorf("plot: heatmap %q has %d tick labels for %d columns or rows", hm.Title, len(ax.labels), ax.n)
		}
		var ticks gp.ConstantTicks
		for i, l := range ax.labels {
			ticks = append(ticks, gp.Tick{Value: float64(i), Label: l})
		}
		ax.axis.Tick.Marker = ticks
	}
	// The colour bar is a plot of its own at the right of the cell: a fixed-width bar, its tick
	// labels to its left (as wide as they need), spanning the heatmap's height.
	bar := gp.New()
	bar.HideX()
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	labels := bar.DataCanvas(c).Min.X - c.Min.X
	heat := c
	heat.Max.X -= labels + px(colourBarWidth+colourBarGap+colourBarMargin)
	p.Draw(heat)
	data := p.DataCanvas(heat)
	barCanvas := c
	barCanvas.Min.X, barCanvas.Min.Y, barCanvas.Max.Y = heat.Max.X+px(colourBarGap), data.Min.Y, data.Max.Y
	barCanvas.Max.X -= px(colourBarMargin)
	bar.Draw(barCanvas)
	return nil
}

// redYellowGreen is ColorBrewer's RdYlGn at its ends and middle.
var redYellowGreen = []color.RGBA{{0xd7, 0x30, 0x27, 0xff}, {0xfe, 0xe0, 0x8b, 0xff}, {0x1a, 0x98, 0x50, 0xff}}

// ramp is a palette.ColorMap that interpolates linearly in RGB between evenly spaced stops.
type ramp struct {
	stops    []color.RGBA
	min, max float64
	alpha    float64
}

func (r *ramp) At(v float64) (color.Color, error) {
	if v < r.min || v > r.max || math.IsNaN(v) {
		return nil, palette.ErrOverflow
	}
	t := 0.0
	if r.max > r.min {
		t = (v - r.min) / (r.max - r.min) * float64(len(r.stops)-1)
	}
	i := min(int(t), len(r.stops)-2)
	f := t - float64(i)
	a, b := r.stops[i], r.stops[i+1]
	mix := func(x, y uint8) uint8 { return uint8(math.Round((float64(x)*(1-f) + float64(y)*f) * r.alpha)) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), uint8(math.Round(255 * r.alpha))}, nil
}

func (r *ramp) Max() float64       { return r.max }
func (r *ramp) SetMax(v float64)   { r.max = v }
func (r *ramp) Min() float64       { return r.min }
func (r *ramp) SetMin(v float64)   { r.min = v }
func (r *ramp) Alpha() float64     { return r.alpha }
func (r *ramp) SetAlpha(a float64) { r.alpha = a }
func (r *ramp) Palette(n int) palette.Palette {
	cs := make([]color.Color, n)
	for i := range cs {
		v := r.min
		if n > 1 {
			v += (r.max - r.min) * float64(i) / float64(n-1)
		}
		cs[i], _ = r.At(v)
	}
	return colours(cs)
}

// colours is a palette.Palette of fixed colours.
type colours []color.Color

func (c colours) Colors() []color.Color { return c }

// raster is a plotter that draws a prepared image over the cells [-0.5, cols-0.5] x
// [-0.5, rows-0.5], whatever the direction of the axes.
type raster struct {
	img        image.Image
	cols, rows int
}

func (r raster) Plot(c draw.Canvas, p *gp.Plot) {
	trX, trY := p.Transforms(&c)
	x0, x1 := trX(-0.5), trX(float64(r.cols)-0.5)
	y0, y1 := trY(-0.5), trY(float64(r.rows)-0.5)
	c.DrawImage(vg.Rectangle{Min: vg.Point{X: min(x0, x1), Y: min(y0, y1)}, Max: vg.Point{X: max(x0, x1), Y: max(y0, y1)}}, r.img)
}

func (r raster) DataRange() (xmin, xmax, ymin, ymax float64) {
	return -0.5, float64(r.cols) - 0.5, -0.5, float64(r.rows) - 0.5
}

// Series is one line of a Lines panel.
type Series struct {
	Label string
	X, Y  []float64
	// Lo and Hi, when set (as long as Y), are the ends of an error bar at each point, e.g. a 95%
	// interval over seeds; a NaN end, or Lo == Hi, draws no bar there.
	Lo, Hi []float64
	// Style picks the colour and dash pattern: 1 + an index shared across panels, so a curve
	// keeps its look from panel to panel; 0 means the series' position in its panel.
	Style int
	// Colour, when set, replaces the style's colour (the style still picks the dashes): a
	// baseline drawn grey, apart from the colours of the curves it is a baseline for.
	Colour color.Color
	// Points marks each point with a circle: a variant drawn in the style of the curve it
	// varies, beside that curve.
	Points bool
}

// lineColours is matplotlib's "tab10" without its grey (left to baselines): the colours the
// project's readers know from their own plots, and nine that stay apart where plotutil's seven
// soft colours have two reds.
var lineColours = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0xbc, 0xbd, 0x22, 0xff}, color.RGBA{0x17, 0xbe, 0xcf, 0xff},
}

// Colours is how many colours styles cycle through before the dash pattern changes: Style 1 +
// k·Colours is the first colour with the k-th dash pattern.
var Colours = len(lineColours)

// Lines draws one or more series against a shared x axis, with a legend when they are named.
// Series are told apart by colour, then (past the Colours colours) by dash pattern.
type Lines struct {
	Title, XLabel, YLabel string
	Series                []Series
	// LogX draws x on a log-2 scale (lengths 64, 128, ... evenly spaced); x must be positive.
	LogX bool
	// LogY draws y on a log-10 scale (losses that fall by decades); y must be positive.
	LogY bool
	// Marks are x values drawn as dashed vertical lines, e.g. the training length.
	Marks []float64
	// YMin, YMax fix the y range when YMax > YMin (lines leaving it are clipped); else automatic.
	YMin, YMax float64
	// MaxLegend is the most legend entries drawn (0 means 8); with more series the legend is
	// left out, since it would cover the lines.
	MaxLegend int
}

func (l Lines) draw(c draw.Canvas) error {
	p := gp.New()
	p.Title.Text = l.Title
	p.X.Label.Text, p.Y.Label.Text = l.XLabel, l.YLabel
	p.Add(plotter.NewGrid())
	if l.LogX {
		p.X.Scale = gp.LogScale{}
		p.X.Tick.Marker = log2Ticks{}
	}
	if l.LogY {
		p.Y.Scale = gp.LogScale{}
		p.Y.Tick.Marker = log10Ticks{}
	}
	for i, s := range l.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("plot: series %q has %d x and %d y values", s.Label, len(s.X), len(s.Y))
		}
		xys := make(plotter.XYs, len(s.X))
		for k := range s.X {
			if l.LogX && s.X[k] <= 0 {
				return fmt.Errorf("plot: series %q has x = %v on a log scale; x must be positive", s.Label, s.X[k])
			}
			if l.LogY && s.Y[k] <= 0 {
				return fmt.Errorf("plot: series %q has y = %v on a log scale; y must be positive", s.Label, s.Y[k])
			}
			xys[k].X, xys[k].Y = s.X[k], s.Y[k]
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("plot: series %q: %w", s.Label, err)
		}
		style := i
		if s.Style > 0 {
			style = s.Style - 1
		}
		line.Color = lineColours[style%Colours]
		if s.Colour != nil {
			line.Color = s.Colour
		}
		line.Dashes = plotutil.Dashes(style / Colours)
		line.Width = vg.Points(1.2)
		p.Add(line)
		legend := []gp.Thumbnailer{line}
		if s.Points {
			pts, err := plotter.NewScatter(xys)
			if err != nil {
				return fmt.Errorf("plot: series %q: %w", s.Label, err)
			}
			pts.Color = line.Color
			pts.Shape = draw.CircleGlyph{}
			pts.Radius = vg.Points(2.5)
			p.Add(pts)
			legend = append(legend, pts)
		}
		if s.Lo != nil || s.Hi != nil {
			bars, err := errorBars(s, l)
			if err != nil {
				return err
			}
			if bars != nil {
				bars.Color = line.Color
				bars.Width = vg.Points(1)
				p.Add(bars)
			}
		}
		if s.Label != "" && len(l.Series) <= orDefault(l.MaxLegend, 8) {
			p.Legend.Add(s.Label, legend...)
		}
	}
	if l.YMax > l.YMin {
		p.Y.Min, p.Y.Max = l.YMin, l.YMax
	}
	for _, x := range l.Marks {
		// Spans the y range computed so far; drawn last so it is not hidden.
		lo, hi := p.Y.Min, p.Y.Max
		mark, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
		if err != nil {
			return fmt.Errorf("plot: mark at x=%v: %w", x, err)
		}
		mark.Color = color.Gray{Y: 0x60}
		mark.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(mark)
	}
	p.Legend.Top = true
	// The legend goes in a column of its own at the right: drawn over the data it hid the curves
	// that end high at long lengths, the ones a reader looks for.
	if r := p.Legend.Rectangle(c); r.Max.X > r.Min.X {
		w := r.Max.X - r.Min.X + px(8)
		c.Max.X -= w
		p.Legend.XOffs = w
	}
	p.Draw(c)
	return nil
}

// errorBars draws a series' intervals. Bars are clamped to a fixed y range, since unlike lines
// gonum draws them past the axes.
func errorBars(s Series, l Lines) (*plotter.YErrorBars, error) {
	if len(s.Lo) != len(s.Y) || len(s.Hi) != len(s.Y) {
		return nil, fmt.Errorf("plot: series %q has %d values but %d and %d interval ends", s.Label, len(s.Y), len(s.Lo), len(s.Hi))
	}
	var pts errPoints
	for k := range s.Y {
		lo, hi := s.Lo[k], s.Hi[k]
		if math.IsNaN(lo) || math.IsNaN(hi) || lo == hi {
			continue
		}
		if l.YMax > l.YMin {
			lo, hi = min(max(lo, l.YMin), l.YMax), min(max(hi, l.YMin), l.YMax)
		}
		pts = append(pts, errPoint{s.X[k], s.Y[k], s.Y[k] - lo, hi - s.Y[k]})
	}
	if len(pts) == 0 {
		return nil, nil
	}
	return plotter.NewYErrorBars(pts)
}

// errPoints is one series' points with the distances from each to its bar's ends.
type errPoint struct{ x, y, down, up float64 }
type errPoints []errPoint

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errPoints) YError(i int) (float64, float64) { return e[i].down, e[i].up }

// log2Ticks labels a log-scale axis at the powers of two inside its range.
type log2Ticks struct{}

func (log2Ticks) Ticks(min, max float64) []gp.Tick {
	var ticks []gp.Tick
	for e := math.Floor(math.Log2(min)); e <= math.Ceil(math.Log2(max)); e++ {
		if v := math.Exp2(e); v >= min*(1-1e-9) && v <= max*(1+1e-9) {
			ticks = append(ticks, gp.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
		}
	}
	return ticks
}

// log10Ticks labels a log-scale axis at 1, 2 and 5 times the powers of ten inside its range,
// with unlabelled ticks at the other multiples. A range holding fewer than three of those (a
// loss between 1.2 and 3 nats) gets evenly spaced ticks instead: gonum's LogTicks labels only
// powers of ten, and such an axis had no number on it at all.
type log10Ticks struct{}

func (log10Ticks) Ticks(min, max float64) []gp.Tick {
	var ticks []gp.Tick
	labelled := 0
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < min*(1-1e-9) || v > max*(1+1e-9) {
				continue
			}
			t := gp.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = fmt.Sprintf("%.6g", v)
				labelled++
			}
			ticks = append(ticks, t)
		}
	}
	if labelled < 3 {
		return gp.DefaultTicks{}.Ticks(min, max)
	}
	return ticks
}
