// Package pressure reads how long the machine's tasks have waited for a
// CPU, from Linux's pressure stall information.
package pressure

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUStall is the cumulative time some task of the machine waited for a
// CPU (/proc/pressure/cpu, Linux 4.20+); false where it is not reported.
func CPUStall() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	_, total, ok := strings.Cut(line, "total=")
	if !ok {
		return 0, false
	}
	us, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
	return time.Duration(us) * time.Microsecond, err == nil
}
