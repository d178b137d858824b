package kernels

// Go declarations of group_amd64.s (VNNI) and group_avx2_amd64.s.

//go:noescape
func q4GroupDotVNNI(gq *uint8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int)

//go:noescape
func q8GroupDotVNNI(gq *int8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int)

//go:noescape
func q4GroupDot4VNNI(gq *uint8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int)

//go:noescape
func q8GroupDot4VNNI(gq *int8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int)

//go:noescape
func q4GroupDotAVX2(gq *uint8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int)

//go:noescape
func q8GroupDotAVX2(gq *int8, gd *uint16, xq *int8, xs *int32, xd *float32, y *float32, groups int, nb int)

//go:noescape
func q4GroupDot4AVX2(gq *uint8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int)

//go:noescape
func q8GroupDot4AVX2(gq *int8, gd *uint16, xq *int8, xstride int, xs4 *int32, xd4 *float32, y *float32, ystride int, groups int, nb int)
