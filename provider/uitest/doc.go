// Package uitest drives the provider lab's dashboard (GET /ui) in a real,
// headless Chromium and checks what a person would see on it. It holds only
// tests; it is a package of its own so that `go test ./provider/` stays fast.
package uitest
