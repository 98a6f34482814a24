//go:build !linux

package main

import "syscall"

// workerSysProcAttr: no parent-death signal outside Linux; a worker still
// stops when its stdin (held by the stress process) reaches EOF.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }
