package fixturetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Special is a path that exists and is not a regular file.
type Special struct {
	Kind string // "block device", "character device", "named pipe (FIFO)", "socket", "directory"
	Path string
	// Image is the file behind a block device (a loop device), whose bytes
	// must stay as they were; "" for the other kinds.
	Image string
}

// NonRegular makes, for t, one path of every kind that is not a regular
// file: a loop block device over a 1 MiB image of zeroes in t.TempDir()
// (losetup; detached when t ends), and in t.TempDir() a character device
// (mknod, the numbers of /dev/null), a FIFO, a socket inode and a
// directory. It needs root and losetup: without them it skips t, and fails
// it under CI.
func NonRegular(t testing.TB) []Special {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	if os.Geteuid() != 0 {
		fail("a loop device and a character device need root (losetup, mknod); run the test as root")
	}
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		fail("losetup is missing (util-linux): it attaches the loop device the test writes through")
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "blk.img")
	if err := os.WriteFile(img, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(losetup, "-f", "--show", img).CombinedOutput()
	if err != nil {
		fail("losetup -f --show %s: %v: %s (is the loop module loaded, are loop devices free?)", img, err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	chr := filepath.Join(dir, "chardev")
	if err := syscall.Mknod(chr, syscall.S_IFCHR|0o600, int(1<<8|3)); err != nil {
		fail("mknod %s: %v", chr, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "socket")
	if err := syscall.Mknod(sock, syscall.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "directory")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	return []Special{
		{Kind: "block device", Path: dev, Image: img},
		{Kind: "character device", Path: chr},
		{Kind: "named pipe (FIFO)", Path: fifo},
		{Kind: "socket", Path: sock},
		{Kind: "directory", Path: sub},
	}
}

// Untouched fails t when anything was written to s or beside it: a SQLite
// side file (-wal, -shm, -journal) or the write-lock file next to the
// path, an entry inside the directory, a byte of the loop device that is
// not zero.
func (s Special) Untouched(t testing.TB) {
	t.Helper()
	for _, suffix := range []string{"-wal", "-shm", "-journal", "-hslock"} {
		if _, err := os.Lstat(s.Path + suffix); err == nil {
			_ = os.Remove(s.Path + suffix) // the next check starts clean
			t.Errorf("%s (%s) got %s beside it", s.Path, s.Kind, s.Path+suffix)
		}
	}
	if s.Kind == "directory" {
		if es, _ := os.ReadDir(s.Path); len(es) > 0 {
			t.Errorf("%s (directory) got entries: %v", s.Path, es)
		}
	}
	if s.Image != "" {
		b, err := os.ReadFile(s.Path) // the device: its cache holds what was written
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range b {
			if c != 0 {
				t.Errorf("%s (%s) was written: byte %d of its image is %#x (%q...)", s.Path, s.Kind, i, c, b[i:min(i+16, len(b))])
				break
			}
		}
	}
}
