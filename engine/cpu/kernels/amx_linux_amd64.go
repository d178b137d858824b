package kernels

import (
	"errors"
	"syscall"
)

const (
	archReqXcompPerm = 0x1023 // arch_prctl: request permission for a dynamic XSAVE feature
	xfeatureTileData = 18     // XFEATURE_XTILEDATA
)

// requestTiles asks Linux for the AMX tile registers (arch_prctl ARCH_REQ_XCOMP_PERM, kernel
// 5.16+), which a process gets only on request.
func requestTiles() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureTileData, 0); errno != 0 {
		return errors.New("the kernel refused the tile registers (arch_prctl: " + errno.Error() + ")")
	}
	return nil
}
