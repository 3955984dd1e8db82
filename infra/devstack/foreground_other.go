//go:build !(linux || darwin)

package main

// inTerminalForeground reports false where the terminal's foreground group is not looked up,
// so every signal is passed on.
func inTerminalForeground() bool { return false }
