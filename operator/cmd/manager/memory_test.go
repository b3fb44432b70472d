package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
)

// tuneMemory changes the process's collector settings: each case restores
// them, and none runs in parallel.
func TestTuneMemory(t *testing.T) {
	tests := map[string]struct {
		env           map[string]string
		profiling     bool
		wantGCPercent int
		wantProfiling bool
	}{
		"defaults": {wantGCPercent: defaultGCPercent},
		"pprof served keeps heap profiling": {profiling: true,
			wantGCPercent: defaultGCPercent, wantProfiling: true},
		"the environment's GOGC and profile rate win": {
			env:           map[string]string{"GOGC": "90", "GODEBUG": "madvdontneed=1,memprofilerate=4096"},
			wantGCPercent: 90, wantProfiling: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			// automemlimit reads the process environment, not lookupEnv:
			// without this, a test run in a container with a memory limit
			// would set the test process's GOMEMLIMIT.
			t.Setenv("AUTOMEMLIMIT", "off")
			// The environment's GOGC is read by the runtime at start, not
			// by tuneMemory: stand in for it.
			gcPercent := debug.SetGCPercent(90)
			rate := runtime.MemProfileRate
			t.Cleanup(func() {
				debug.SetGCPercent(gcPercent)
				runtime.MemProfileRate = rate
			})
			runtime.MemProfileRate = 512 * 1024
			settings := tuneMemory(envOf(tt.env), tt.profiling, logr.Discard())

			if got := debug.SetGCPercent(gcPercent); got != tt.wantGCPercent {
				t.Errorf("GOGC: got %d, want %d", got, tt.wantGCPercent)
			}
			if got := runtime.MemProfileRate != 0; got != tt.wantProfiling {
				t.Errorf("heap profiling on: got %t (rate %d), want %t", got, runtime.MemProfileRate, tt.wantProfiling)
			}
			logged := map[any]any{}
			for i := 0; i+1 < len(settings); i += 2 {
				logged[settings[i]] = settings[i+1]
			}
			if logged["heapProfiling"] != tt.wantProfiling || logged["memoryLimit"] != "none" {
				t.Errorf("start-up log settings %v: want heapProfiling=%t, memoryLimit=none", settings, tt.wantProfiling)
			}
		})
	}
}
