package main

import (
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"

	"github.com/dynamoctl/dynamo-operator/operator/config"
)

// defaultGCPercent is the operator's GOGC when the environment sets none.
// Go's default, 100, lets the heap grow to twice what is live before it
// collects; the operator's live heap is mostly its cache, which only grows
// with the graphs, so that headroom is memory held for nothing. At 500
// graphs (make bench) it was 55 MiB of a 170 MiB RSS. Prometheus ships
// GOGC=75 for the same reason. 40 rather than 50: what is live after a
// burst of graphs is their cache, and each tenth off the headroom is 4 MB
// of heap goal at 500 graphs for a few per cent more collector CPU (figures
// in docs/dev/performance.md). It lives in config, whose help text and
// generated reference name it.
const defaultGCPercent = config.DefaultGCPercent

// memoryLimitRatio is the share of the container's memory limit the Go
// runtime aims to stay under (automemlimit's default): the rest is for
// what the runtime does not count, such as the binary's mapped pages.
const memoryLimitRatio = config.MemoryLimitRatio

// tuneMemory sets the garbage collector's defaults for a long-running
// operator, leaving alone what the environment already chose: GOGC, unless
// set, becomes defaultGCPercent; GOMEMLIMIT, unless set (or AUTOMEMLIMIT=off),
// becomes memoryLimitRatio of the cgroup's memory limit, so the collector
// works harder as the operator nears its Pod's limit instead of being
// OOM-killed. Heap profiling stays on only when its profile can be read
// (profiling: --pprof-bind-address serves it) or GODEBUG sets its rate: Go
// samples every 512 KiB allocated into a table of allocation stacks that
// reached 2.3 MB of the operator's RSS at 500 graphs, for a profile no one
// could fetch. It returns the settings, for the start-up log.
func tuneMemory(lookupEnv func(string) (string, bool), profiling bool, log logr.Logger) []any {
	gcPercent, set := lookupEnv("GOGC")
	if !set {
		debug.SetGCPercent(defaultGCPercent)
		gcPercent = strconv.Itoa(defaultGCPercent)
	}
	godebug, _ := lookupEnv("GODEBUG")
	heapProfile := true
	if !profiling && !strings.Contains(godebug, "memprofilerate=") {
		runtime.MemProfileRate = 0
		heapProfile = false
	}
	// automemlimit reads GOMEMLIMIT and AUTOMEMLIMIT itself, from the
	// process environment; no limit (outside a container) leaves it unset;
	// its provider is the cgroup's limit by default. Its own log lines are
	// discarded: it logs a failure at error level, which outside Linux (a
	// developer's laptop) is no error of ours.
	limit, err := memlimit.Set(
		memlimit.WithRatio(memoryLimitRatio),
		memlimit.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		// Not being in a cgroup with a limit is not an error (ErrNoLimit is
		// handled inside); anything else only costs the automatic limit.
		log.V(1).Info("no automatic memory limit", "reason", err.Error())
	}
	limitText := "none"
	if limit > 0 && limit < math.MaxInt64 {
		limitText = fmt.Sprintf("%d MiB", limit>>20)
	}
	return []any{"gcPercent", gcPercent, "gcPercentFromEnvironment", set, "memoryLimit", limitText,
		"heapProfiling", heapProfile}
}
