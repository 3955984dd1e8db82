//go:build !linux

package faultproxy

import (
	"errors"
	"net"
	"net/netip"
)

// attributeSupported tells whether requests can be attributed to processes here: only Linux
// has /proc/net/tcp.
const attributeSupported = false

var errNoProc = errors.New("faultproxy: requests are attributed to processes on Linux only")

func processOf(client, server netip.AddrPort) (int, error) { return 0, errNoProc }

func functionOf(pid int) (string, error) { return "", errNoProc }

func killProcess(pid int, function string) error { return errNoProc }

func processesOf(pid int, function string) ([]int, error) { return nil, errNoProc }

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	return ap, err == nil
}
