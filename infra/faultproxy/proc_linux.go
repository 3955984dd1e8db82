//go:build linux

package faultproxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// attributeSupported tells whether requests can be attributed to processes here.
const attributeSupported = true

// processOf finds the local process holding the client end of a loopback TCP connection:
// client is that end's address (the request's RemoteAddr), server the proxy's end. It looks the
// socket up in /proc/net/tcp (and tcp6) by the two addresses, then the process whose
// /proc/<pid>/fd links to that socket's inode. Only processes of the proxy's own user are
// readable, which is all a local emulator's functions are.
func processOf(client, server netip.AddrPort) (int, error) {
	inode, err := socketInode(client, server)
	if err != nil {
		return 0, err
	}
	target := "socket:[" + inode + "]"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && l == target {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process holds socket %s", inode)
}

// socketInode returns the inode of the socket whose local end is client and remote end server.
func socketInode(client, server netip.AddrPort) (string, error) {
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 {
				continue
			}
			local, lok := parseProcAddr(fields[1])
			remote, rok := parseProcAddr(fields[2])
			if lok && rok && sameEnd(local, client) && sameEnd(remote, server) {
				_ = f.Close()
				return fields[9], nil
			}
		}
		_ = f.Close()
	}
	return "", fmt.Errorf("no socket %s -> %s", client, server)
}

func sameEnd(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}

// parseProcAddr parses /proc/net/tcp's "0100007F:1F90": the address as host-order 32-bit
// words in hex, the port in hex.
func parseProcAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		w := binary.LittleEndian.Uint32(raw[i:])
		binary.BigEndian.PutUint32(raw[i:], w)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// functionOf returns the AWS_LAMBDA_FUNCTION_NAME in pid's environment ("" when it has none).
func functionOf(pid int) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return "", err
	}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("AWS_LAMBDA_FUNCTION_NAME=")); ok {
			return string(v), nil
		}
	}
	return "", nil
}

// processesOf returns the pids of pid's siblings (the processes of pid's parent, the emulator
// that runs the function, other than pid) whose AWS_LAMBDA_FUNCTION_NAME is function. Another
// emulator's function of the same name (a stack deployed twice) is left alone.
func processesOf(pid int, function string) ([]int, error) {
	parent, err := parentOf(pid)
	if err != nil {
		return nil, err
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range procs {
		n, err := strconv.Atoi(p.Name())
		if err != nil || n == pid || n == os.Getpid() {
			continue
		}
		if pp, err := parentOf(n); err != nil || pp != parent {
			continue
		}
		if fn, err := functionOf(n); err == nil && fn == function {
			out = append(out, n)
		}
	}
	return out, nil
}

// parentOf returns pid's parent pid, from /proc/<pid>/stat ("pid (comm) state ppid ...", comm
// may hold spaces and parentheses).
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	return strconv.Atoi(fields[1])
}

// killProcess sends SIGKILL to pid once it has checked that pid is still the process of
// function (a pid is reused only after its process was reaped).
func killProcess(pid int, function string) error {
	fn, err := functionOf(pid)
	if err != nil {
		return err
	}
	if fn != function {
		return fmt.Errorf("process %d is no longer %s", pid, function)
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// addrPort turns a net.Addr or "host:port" string into a netip.AddrPort.
func addrPort(a net.Addr) (netip.AddrPort, bool) {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort(), true
	}
	ap, err := netip.ParseAddrPort(a.String())
	return ap, err == nil
}
