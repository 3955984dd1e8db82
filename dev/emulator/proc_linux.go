package emulator

import "syscall"

// sysProcAttr puts an emulator in its own process group, and has the kernel kill it if the
// process that started it dies without calling Stop (say, on SIGKILL).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
