package tests

import (
	"cmp"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tabrelay/tabrelay/protocol"
)

// The admission steps of BenchmarkLeanCallPath (idleTabs): which phases
// run, the new browsers' lean tabs (lean_tab_test.go) added by steps, what
// they cost this process, and a profile of the relay while it admits them.

// leanPhases reads LEAN_PHASES, the phases to run (default all, or tabs
// and idle with LEAN_IDLE_ONLY=1): calls (latency and throughput), tabs
// (the idle tabs' steps: admission and RSS), idle (idle CPU) and storm
// (the restart); idle and storm need tabs.
func leanPhases(b *testing.B) map[string]bool {
	v := os.Getenv("LEAN_PHASES")
	switch {
	case v == "" && os.Getenv("LEAN_IDLE_ONLY") == "1":
		v = "tabs,idle"
	case v == "":
		v = "calls,tabs,idle,storm"
	}
	out := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		switch p = strings.TrimSpace(p); p {
		case "calls", "tabs", "idle", "storm":
			out[p] = true
		default:
			b.Fatalf("LEAN_PHASES: %q is none of calls, tabs, idle, storm", p)
		}
	}
	if (out["idle"] || out["storm"]) && !out["tabs"] {
		b.Fatal("LEAN_PHASES: idle and storm run on the idle tabs: add tabs")
	}
	return out
}

// addIdleTabs adds n idle tabs, each a new browser, at most inflight
// connecting at once, and returns the seconds until the last was
// welcomed. They are leanTabs, or headless tabs with LEAN_CLIENT=headless
// (what the benchmark ran before: ~270 µs of its CPU per tab).
func (r *benchRelay) addIdleTabs(n, inflight int) float64 {
	if os.Getenv("LEAN_CLIENT") == "headless" {
		return r.addTabs(n, inflight)
	}
	addr := strings.TrimPrefix(r.url, "http://")
	bundle := protocol.ProbeBundle().Version // the relay's (RELAY_BUNDLE=probe), decoded once
	tabs := make(chan *leanTab)
	errs := &errorList{}
	var wg sync.WaitGroup
	start := time.Now()
	// inflight openers: long-lived goroutines, which dial, shake hands and
	// read the welcome; each tab's own goroutine then answers its pings.
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tabs {
				s := t.open()
				go t.run(s)
				if s.end != nil {
					errs.add("a tab not welcomed: %v", s.end.err)
				}
			}
		}()
	}
	for range n {
		k := benchSource.Add(1)
		t := newLeanTab(addr, origin, bundle, net.IPv4(127, 0, 0, byte(2+k%253)), r.idleErrs)
		r.stopTabs = append(r.stopTabs, t.stop)
		tabs <- t
	}
	close(tabs)
	wg.Wait()
	if err := errs.err(); err != nil {
		r.b.Fatal(err)
	}
	if err := r.idleErrs.err(); err != nil {
		r.b.Fatal(err)
	}
	return time.Since(start).Seconds()
}

// selfCPUMicros is this process's user+system CPU: the benchmark's tabs
// while they connect.
func selfCPUMicros() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
}

// profileAdmission takes a CPU profile of the relay while the tabs of the
// step up to LEAN_ADMIT_PROFILE_STEP are admitted, into LEAN_ADMIT_PROFILE
// (a file), for LEAN_ADMIT_PROFILE_SECS (default 3) seconds, and its
// allocations before and after the step into LEAN_ADMIT_PROFILE.allocs0
// and LEAN_ADMIT_PROFILE.allocs (go tool pprof -diff_base); the returned
// func waits for them.
func (r *benchRelay) profileAdmission(step int) func() {
	path := os.Getenv("LEAN_ADMIT_PROFILE")
	if path == "" || os.Getenv("LEAN_ADMIT_PROFILE_STEP") != strconv.Itoa(step) {
		return func() {}
	}
	secs, _ := strconv.Atoi(os.Getenv("LEAN_ADMIT_PROFILE_SECS"))
	secs = cmp.Or(secs, 3)
	r.saveProfile("allocs?gc=1", path+".allocs0", time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.saveProfile(fmt.Sprintf("profile?seconds=%d", secs), path, time.Duration(secs+30)*time.Second)
	}()
	return func() {
		<-done
		r.saveProfile("allocs?gc=1", path+".allocs", time.Minute) // the step's: -diff_base …allocs0
	}
}
