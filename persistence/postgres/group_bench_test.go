//go:build unix

package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// BenchmarkGroupCommitCreates commits creates from many goroutines
// under the membership fence, as a cluster node does; cpu-µs/op is this
// process's CPU (Kassa's side, not the server's) per create.
func BenchmarkGroupCommitCreates(b *testing.B) {
	db, _ := openClocked(b, kassa.SystemClock{})
	ctx := context.Background()
	if err := db.Members().Join(ctx, "node-1"); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	var ru0, ru1 syscall.Rusage
	b.SetParallelism(8)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := fmt.Sprintf("inv_%d", n.Add(1))
			bt, _ := createBatch(db, id, "bcrt1q"+id)
			if err := db.Members().Commit(ctx, "node-1", bt); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
}
