// Package redisinfo asks a redis-server which process it is, so that code
// that starts one on a free port can tell its own server's answer from that
// of another server that took the port meanwhile: the one it started then
// exits unable to bind, and a PING on the port is answered by the other.
package redisinfo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// PID asks the redis-server at addr for its process ID (INFO server).
func PID(ctx context.Context, addr string) (int, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n') // $<length>
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || !strings.HasPrefix(head, "$") || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("unexpected reply to INFO %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO server without process_id")
}
