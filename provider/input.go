package provider

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The lab reads its input strictly: a value it would have to guess about is
// refused with 400 and a sentence saying what is wrong, never read leniently.

// A paramError is a bad query parameter (400 bad_parameter).
type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

func badParamf(format string, args ...any) error {
	return &paramError{fmt.Sprintf(format, args...)}
}

// quoted quotes a client's value for a message, cut short if long, so an
// error never echoes a huge input back.
func quoted(v string) string {
	const max = 40
	if len(v) > max {
		return fmt.Sprintf("%q… (%d bytes)", v[:max], len(v))
	}
	return fmt.Sprintf("%q", v)
}

// readQuery reads the parameters named in names from a raw query string into
// vals (same order) and returns a bit set of those present. It is strict
// where url.ParseQuery is lenient or silent: every %-escape must be valid
// (in any parameter), a named parameter may appear only once, and ';' is not
// a separator. Other parameters are ignored. It allocates nothing unless a
// value needs unescaping: /quotes is the benchmark's hot path.
func readQuery(rawQuery string, names []string, vals []string) (present uint, err error) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		if pair == "" {
			continue
		}
		if strings.Contains(pair, ";") {
			return 0, badParamf("the query contains ';' (in %s): separate parameters with '&'", quoted(pair))
		}
		k, v, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			if k, err = url.QueryUnescape(k); err != nil {
				return 0, badParamf("query parameter name %s is not valid URL encoding", quoted(k))
			}
		}
		i := 0
		for i < len(names) && names[i] != k {
			i++
		}
		if strings.ContainsAny(v, "%+") {
			raw := v
			if v, err = url.QueryUnescape(v); err != nil {
				return 0, badParamf("query parameter %s=%s is not valid URL encoding", k, quoted(raw))
			}
		}
		if i == len(names) {
			continue
		}
		if present&(1<<i) != 0 {
			return 0, badParamf("query parameter %s is given more than once; give it once", k)
		}
		present |= 1 << i
		vals[i] = v
	}
	return present, nil
}

// intParam parses an optional integer parameter in [0, max]: absent is 0;
// present, it must be plain decimal digits (no sign, no blank, not empty).
func intParam(name, v string, present bool, max int) (int, error) {
	if !present {
		return 0, nil
	}
	n, ok := plainInt(v, int64(max))
	if !ok {
		return 0, badParamf("query parameter %s=%s: want an integer from 0 to %d", name, quoted(v), max)
	}
	return int(n), nil
}

// plainInt parses s as decimal digits only, at most max.
func plainInt(s string, max int64) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= max
}

// keyParam checks a partner key or request ID given as a query parameter.
func keyParam(name, v string) error {
	if len(v) > MaxKeyBytes {
		return badParamf("query parameter %s is %d bytes long; at most %d are allowed", name, len(v), MaxKeyBytes)
	}
	return nil
}

// errRequestID is a bad X-Request-ID header (400 bad_request_id).
type errRequestID struct{ msg string }

func (e *errRequestID) Error() string { return e.msg }

// requestID returns the X-Request-ID header, "" when absent or empty. It
// refuses a header given twice (which one would count?) and one longer than
// MaxKeyBytes.
func requestID(h http.Header) (string, error) {
	vals := h["X-Request-Id"]
	switch {
	case len(vals) == 0:
		return "", nil
	case len(vals) > 1:
		return "", &errRequestID{fmt.Sprintf("X-Request-ID is given %d times; send it once", len(vals))}
	case len(vals[0]) > MaxKeyBytes:
		return "", &errRequestID{fmt.Sprintf("X-Request-ID is %d bytes long; at most %d are allowed", len(vals[0]), MaxKeyBytes)}
	}
	return vals[0], nil
}
