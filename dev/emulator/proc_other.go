//go:build unix && !linux

package emulator

import "syscall"

// sysProcAttr puts an emulator in its own process group. Outside Linux there is no parent-death
// signal, so an emulator outlives a starter that dies without calling Stop.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
