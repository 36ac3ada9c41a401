package redistest

import "testing"

// A server that cannot bind its port exits; a PING on that port is then
// answered by whichever server holds it, and must not be taken for this one
// (tests that stop and restart their server run beside others, and the
// kernel hands a freed port out again).
func TestStartOnAnotherServersPortFails(t *testing.T) {
	a := Start(t)
	b := &Server{t: t, bin: a.bin, dir: t.TempDir()}
	t.Cleanup(b.Stop)
	if err := b.start(a.Port()); err == nil {
		t.Fatalf("start on %s, which another redis-server holds, succeeded: that server's answer was taken for this one's", a.Addr)
	}
}
