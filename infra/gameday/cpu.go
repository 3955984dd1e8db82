package gameday

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is Linux's clock ticks per second in /proc (USER_HZ, 100 on every architecture Go
// supports there).
const userHZ = 100

// CPUShare is the share of one core the process pid used (user and system time) over d, read
// from /proc (Linux only).
func CPUShare(ctx context.Context, pid int, d time.Duration) (float64, error) {
	before, err := cpuTicks(pid)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	sleep(ctx, d)
	after, err := cpuTicks(pid)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / userHZ / time.Since(start).Seconds(), nil
}

func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return StatTicks(string(b))
}

// StatTicks is utime+stime of a /proc/<pid>/stat line: its 14th and 15th fields, counted
// after the command name's closing parenthesis (the name may hold spaces and parentheses).
func StatTicks(stat string) (int64, error) {
	i := strings.LastIndexByte(stat, ')')
	f := strings.Fields(stat[i+1:])
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("not a /proc stat line: %.60q", stat)
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	return u + s, err
}
