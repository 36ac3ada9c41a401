//go:build !linux

package runner

import "os/exec"

// ChildrenEndWithLab says how a child ends when the lab ends without
// stopping it (kill -9, a crash). There is no parent-death signal here:
// the lab stops its children when it is interrupted (Ctrl-C), terminated
// (SIGTERM), hung up on (a closed terminal, or the program that started it
// ended) or its output is closed (lab demo | head), but a lab killed
// outright leaves them running.
const ChildrenEndWithLab = "the lab stops its children on Ctrl-C, SIGTERM, a hangup and a closed output; killed outright (kill -9), it leaves them running"

func start(cmd *exec.Cmd) error { return cmd.Start() }
