//go:build !amd64

package kernels

func q4GroupDotVNNI(gq *uint8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int) {
	panic("no assembly")
}

func q8GroupDotVNNI(gq *int8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int) {
	panic("no assembly")
}

func q4GroupDot4VNNI(gq *uint8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int) {
	panic("no assembly")
}

func q8GroupDot4VNNI(gq *int8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int) {
	panic("no assembly")
}

func q4GroupDotAVX2(gq *uint8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int) {
	panic("no assembly")
}

func q8GroupDotAVX2(gq *int8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int) {
	panic("no assembly")
}

func q4GroupDot4AVX2(gq *uint8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int) {
	panic("no assembly")
}

func q8GroupDot4AVX2(gq *int8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int) {
	panic("no assembly")
}
