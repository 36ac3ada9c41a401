//go:build linux

package provider

import (
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// ListenBlackhole listens on addr ("127.0.0.1:0" picks a free port) with an
// accept-queue length of 0 and fills the queue with one connection that is
// never accepted. Linux then drops every new SYN, so connects time out.
// The caller must Close it.
func ListenBlackhole(addr string) (*Blackhole, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("blackhole: %w", err)
	}
	fd, err := listenBacklog0(tcp)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: tcp, Err: err}
	}
	bound, err := boundAddr(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("blackhole: %w", err)
	}
	// The filler completes the handshake and waits in the accept queue forever.
	filler, err := net.DialTimeout("tcp", bound, time.Second)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("blackhole: filling the accept queue: %w", err)
	}
	var mu sync.Mutex // guards fd against reuse: once closed, its number may name another socket
	closed := false
	return &Blackhole{
		addr: bound,
		close: func() error {
			mu.Lock()
			defer mu.Unlock()
			closed = true
			filler.Close()
			return syscall.Close(fd)
		},
		drops: func() (uint32, error) {
			mu.Lock()
			defer mu.Unlock()
			if closed {
				return 0, net.ErrClosed
			}
			return socketDrops(fd)
		},
	}, nil
}

// soMeminfo is SO_MEMINFO (Linux 4.12+; the syscall package lacks it):
// getsockopt fills an array of uint32 whose SK_MEMINFO_DROPS entry (index 8)
// is the socket's sk_drops. For a listener, the kernel adds one there for
// every SYN it drops because the accept queue is full (tcp_listendrop).
const (
	soMeminfo      = 55
	skMeminfoDrops = 8
	skMeminfoVars  = 9
)

// socketDrops reads a socket's drop counter.
func socketDrops(fd int) (uint32, error) {
	var info [skMeminfoVars]uint32
	size := uint32(unsafe.Sizeof(info))
	_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.SOL_SOCKET, soMeminfo,
		uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return 0, os.NewSyscallError("getsockopt SO_MEMINFO", errno)
	}
	if size <= skMeminfoDrops*4 {
		return 0, fmt.Errorf("getsockopt SO_MEMINFO: %d bytes, too short for the drop counter", size)
	}
	return info[skMeminfoDrops], nil
}

// listenBacklog0 returns a listening socket bound to a with backlog 0; the
// net package cannot set a backlog, so this uses the system calls directly.
func listenBacklog0(a *net.TCPAddr) (int, error) {
	family := syscall.AF_INET
	var sa syscall.Sockaddr
	if ip4 := a.IP.To4(); ip4 != nil || a.IP == nil {
		s := &syscall.SockaddrInet4{Port: a.Port}
		copy(s.Addr[:], ip4)
		sa = s
	} else {
		family = syscall.AF_INET6
		s := &syscall.SockaddrInet6{Port: a.Port}
		copy(s.Addr[:], a.IP.To16())
		sa = s
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, syscall.IPPROTO_TCP)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	// Like net.Listen: a restart may bind while old connections sit in TIME_WAIT.
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return -1, os.NewSyscallError("setsockopt", err)
	}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return -1, os.NewSyscallError("bind", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		syscall.Close(fd)
		return -1, os.NewSyscallError("listen", err)
	}
	return fd, nil
}

// boundAddr returns the "host:port" the socket is bound to.
func boundAddr(fd int) (string, error) {
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		return "", err
	}
	switch s := sa.(type) {
	case *syscall.SockaddrInet4:
		return net.JoinHostPort(net.IP(s.Addr[:]).String(), fmt.Sprint(s.Port)), nil
	case *syscall.SockaddrInet6:
		return net.JoinHostPort(net.IP(s.Addr[:]).String(), fmt.Sprint(s.Port)), nil
	}
	return "", fmt.Errorf("unexpected socket address %T", sa)
}
