//go:build !amd64

package kernels

// Off amd64 only the portable kernels exist.

func best() string                                 { return Generic }
func supported(p string) bool                      { return p == Generic }
func dot(a, b []float32) float32                   { return dotGo(a, b) }
func dotRows(w []float32, ldw int, x, y []float32) { dotRowsGo(w, ldw, x, y) }
func micro() (int, int, microKernel)               { return 4, 4, kernel4x4Go }

func exp(a, out []float32) { expGo(a, out) }

func maxOf(a []float32) float32 { return maxGo(a) }
