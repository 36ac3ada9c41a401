package budget

import "testing"

func TestCheckURLWantsAnAbsoluteHTTPURL(t *testing.T) {
	for _, s := range []string{"http://127.0.0.1:9101", "http://127.0.0.1:9101/call?ms=100", "https://localhost/x"} {
		if err := CheckURL(s); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range []string{"", "x", "127.0.0.1:9101", "/call?ms=100", "ftp://127.0.0.1/", "http://", "http:///call"} {
		if err := CheckURL(s); err == nil {
			t.Errorf("CheckURL(%q) = nil, want an error", s)
		}
	}
}

func TestCheckHostPortWantsHostAndNumericPort(t *testing.T) {
	for _, s := range []string{"127.0.0.1:9102", "localhost:1", "[::1]:65535"} {
		if err := CheckHostPort(s); err != nil {
			t.Errorf("CheckHostPort(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range []string{"", "x", "127.0.0.1", "127.0.0.1:", ":9102", "127.0.0.1:http", "127.0.0.1:0", "127.0.0.1:70000", "http://127.0.0.1:9102"} {
		if err := CheckHostPort(s); err == nil {
			t.Errorf("CheckHostPort(%q) = nil, want an error", s)
		}
	}
}
