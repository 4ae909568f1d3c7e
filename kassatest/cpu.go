package kassatest

import "syscall"

// ProcessCPU is the CPU time this process used so far, user and system,
// in nanoseconds. A benchmark that reports it per operation (cpu-us/op)
// does not count the time an operation waited for the disk, and counts
// the work of every goroutine it started.
func ProcessCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
