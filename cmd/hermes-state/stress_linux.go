package main

import "syscall"

// workerSysProcAttr makes the kernel kill a stress worker when the stress
// process dies (SIGKILL included), so no worker keeps appending alone.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
