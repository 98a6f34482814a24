package fixturetest

import (
	"strconv"
	"syscall"
)

func mountReadOnly(dir string) error {
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		return err
	}
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		return err
	}
	return nil
}

func mountTmpfs(dir string, size int64) error {
	return syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)+",mode=0700")
}

func unmount(dir string) { _ = syscall.Unmount(dir, syscall.MNT_DETACH) }
