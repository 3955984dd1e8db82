//go:build linux || darwin

package main

import (
	"syscall"
	"unsafe"
)

// inTerminalForeground reports whether devstack belongs to the foreground process group of the
// terminal on its standard input. A Ctrl-C typed there goes to that whole group, so the command,
// which shares devstack's group, has received the SIGINT already.
func inTerminalForeground() bool {
	var fg int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, 0, uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&fg)))
	return errno == 0 && int(fg) == syscall.Getpgrp()
}
