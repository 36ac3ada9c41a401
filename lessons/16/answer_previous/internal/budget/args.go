package budget

import (
	"errors"
	"net"
	"net/url"
	"strconv"
)

// CheckURL accepts an absolute http (or https) URL with a host, like
// http://127.0.0.1:9101/call?ms=100. Anything else given as --url or --base
// ("x", "127.0.0.1:9101", "/call") is a usage error: the tool says so and
// exits 2 instead of calling it and reporting phase connect, as if a partner
// had been out of reach.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("not an absolute http URL like http://127.0.0.1:9101")
	}
	return nil
}

// CheckHostPort accepts host:port with a numeric port, like 127.0.0.1:9102:
// what --blackhole must be.
func CheckHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || host == "" || n < 1 || n > 65535 {
		return errors.New("not host:port like 127.0.0.1:9102")
	}
	return nil
}
