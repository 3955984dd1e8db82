package emulator

import "syscall"

// ChildProcAttr puts a child process (an emulator, the Lambda RIE) in its own process group,
// and has the kernel kill it if the process that started it dies without calling Stop (say,
// on SIGKILL).
func ChildProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
