//go:build !amd64

package kernels

func q4GroupDotVNNI(gq *uint8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int) {
	panic("no assembly")
}

func q8GroupDotVNNI(gq *int8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int) {
	panic("no assembly")
}
