//go:build unix && !linux

package emulator

import "syscall"

// ChildProcAttr puts a child process (an emulator, the Lambda RIE) in its own process group.
// Outside Linux there is no parent-death signal, so a child outlives a starter that dies
// without calling Stop.
func ChildProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
