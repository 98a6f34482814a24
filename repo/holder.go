package repo

import (
	"os"
	"regexp"
	"strconv"
	"sync"
)

// Lock and lease holders in Hermes' structured form
// (hermes_state_pidns.py): `pid=<pid>:pidns=<inode of /proc/self/ns/pid>:<tag>`.
// A holder names a local process only within its PID namespace: a holder of
// another namespace, or one without a stamp, is never probed and keeps its
// row until the row expires.

var (
	holderPIDRe  = regexp.MustCompile(`(?:^|:)pid=(\d+)(?::|$)`)
	holderNSRe   = regexp.MustCompile(`(?:^|:)pidns=(\d+)(?::|$)`)
	pidNSLinkRe  = regexp.MustCompile(`\[(\d+)\]`)
	localNSOnce  sync.Once
	localNS      string
	localNSKnown bool // the platform has PID namespaces (Linux)
)

// localPIDNamespace returns this process' PID namespace id ("" when the
// lookup failed) and whether the platform has namespaces.
func localPIDNamespace() (string, bool) {
	localNSOnce.Do(func() {
		link, err := os.Readlink("/proc/self/ns/pid")
		if err != nil {
			_, statErr := os.Stat("/proc/self/ns")
			localNSKnown = statErr == nil
			return
		}
		localNSKnown = true
		if m := pidNSLinkRe.FindStringSubmatch(link); m != nil {
			localNS = m[1]
		}
	})
	return localNS, localNSKnown
}

// HolderID returns a holder string in Hermes' structured form for this
// process: `pid=<pid>[:pidns=<namespace>]:<tag>` (tag names the turn or the
// thread; it may be empty). Another process of the same namespace reclaims a
// row held under it as soon as this process is gone (LocalHolderDead), before
// the row expires.
func HolderID(tag string) string {
	s := "pid=" + strconv.Itoa(os.Getpid())
	if ns, _ := localPIDNamespace(); ns != "" {
		s += ":pidns=" + ns
	}
	if tag != "" {
		s += ":" + tag
	}
	return s
}

// LocalHolderDead is Hermes' rule for a holder whose process is gone
// (_compression_lock_holder_process_is_dead with the strict namespace check
// of holder_pid_checkable): true only when the holder names `pid=N` (N > 0,
// not this process), carries a `pidns=` stamp equal to this process' PID
// namespace (on a platform without namespaces the pid alone counts), and no
// process N exists. Any doubt keeps the holder.
func LocalHolderDead(holder string) bool {
	m := holderPIDRe.FindStringSubmatch(holder)
	if m == nil {
		return false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	ns, supported := localPIDNamespace()
	if supported {
		rec := holderNSRe.FindStringSubmatch(holder)
		if rec == nil || ns == "" || rec[1] != ns {
			return false
		}
	}
	return processGone(pid)
}
