package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
	"github.com/dynamoctl/dynamo-operator/sim/kubelet"
	"github.com/dynamoctl/dynamo-operator/sim/nodes"
	"github.com/dynamoctl/dynamo-operator/sim/workers"
)

// upFlags are shared by up and the daemon it starts.
type upFlags struct {
	fs            *flag.FlagSet
	dir           *string
	binDir        *string
	crdDir        *string
	operator      *string
	lws           *string
	lwsCRDs       *string
	lwsBuild      *string
	mode          *string
	poolsFile     *string
	pools         listFlag
	operatorArgs  listFlag
	runImages     listFlag
	podReadyDelay *time.Duration
	modelLoad     *time.Duration
	install       *string
	chart         *string
	helm          *string
	version       *string
	port          *int
	timeout       *time.Duration
	watchPid      *int
}

func newUpFlags(name string) *upFlags {
	root := repoRoot()
	f := &upFlags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.dir = stateDirFlag(f.fs)
	f.binDir = f.fs.String("bin-dir", os.Getenv("KUBEBUILDER_ASSETS"), "directory of etcd, kube-apiserver, kube-controller-manager, kube-scheduler (default: .cache/k8s/<version>)")
	f.crdDir = f.fs.String("crds", filepath.Join(root, "crds"), "CRDs to install; empty installs none")
	f.operator = f.fs.String("operator", filepath.Join(root, "bin", "dynamo-operator"), "operator binary to run; empty runs none")
	f.lws = f.fs.String("lws", filepath.Join(root, ".cache", "bin", "lws-controller"), "LeaderWorkerSet controller binary to run, with its CRDs (make lws builds the pinned one); empty runs none, so the cluster serves no LeaderWorkerSet API")
	f.lwsCRDs = f.fs.String("lws-crds", filepath.Join(root, ".cache", "lws", "crds"), "LeaderWorkerSet's CRDs (make lws copies them from the pinned module)")
	f.lwsBuild = f.fs.String("lws-build", filepath.Join(root, "tools", "lws", "build.sh"), "when --lws is not built yet, up runs this build in the background and the simulator starts the controller once it is built (multinode graphs wait for its API meanwhile); empty: up fails instead")
	f.mode = f.fs.String("mode", "cluster-wide", "operator mode: cluster-wide, namespace:<name>, or hybrid:<name> (cluster-wide plus namespace-scoped in <name>)")
	f.poolsFile = f.fs.String("pools", "", "YAML file of GPU node pools (pools: [{name, count, gpus, product, memoryMiB}])")
	f.fs.Var(&f.pools, "pool", "a GPU pool, name=h100,count=4,gpus=8,product=NVIDIA-H100-80GB-HBM3,memory=81559 (repeatable; replaces the default pools)")
	f.fs.Var(&f.operatorArgs, "operator-arg", "extra operator flag (repeatable)")
	f.fs.Var(&f.runImages, "run-image", "REPO[:TAG]=PATH: run pods of that image (any tag without :TAG) as PATH, as a kubelet would (repeatable; "+daemon.OperatorImage+" runs --operator by default)")
	f.modelLoad = f.fs.Duration("model-load-delay", 3*time.Second, "fake workers' simulated model load: /health is 503 until then (a pod's "+workers.ModelLoadDelayAnnotation+" annotation overrides it, \"never\" never loads)")
	f.install = f.fs.String("install", "process", "how the operator runs: process (a process per operator, --mode), or helm (helm install of --chart as the seeds say: release dynamo-platform in dynamo-system; its pods run --operator)")
	f.chart = f.fs.String("chart", filepath.Join(root, "chart", "dynamo-platform"), "the dynamo-platform chart (--install helm)")
	f.helm = f.fs.String("helm", envOr("HELM", filepath.Join(root, ".cache", "bin", "helm")), "helm binary (--install helm; make helm builds the pinned one)")
	f.version = f.fs.String("image-tag", "", "operator image tag helm installs (--install helm; default the chart's appVersion)")
	f.podReadyDelay = f.fs.Duration("pod-ready-delay", time.Second, "time from scheduling to Running and Ready")
	f.port = f.fs.Int("port", 0, "host loopback port forwarded to the API server (0 picks a free one)")
	f.timeout = f.fs.Duration("timeout", 3*time.Minute, "how long up waits for the simulator to be ready")
	f.watchPid = f.fs.Int("watch-pid", 0, "stop the simulator when this process exits (for tests)")
	return f
}

func (f *upFlags) resolvePools() ([]nodes.Pool, error) {
	var pools []nodes.Pool
	if *f.poolsFile != "" {
		p, err := nodes.LoadConfig(*f.poolsFile)
		if err != nil {
			return nil, err
		}
		pools = append(pools, p...)
	}
	for _, s := range f.pools {
		p, err := nodes.ParsePool(s)
		if err != nil {
			return nil, err
		}
		pools = append(pools, p)
	}
	if len(pools) == 0 {
		pools = nodes.DefaultPools()
	}
	return pools, nil
}

func (f *upFlags) resolveRunImages() ([]kubelet.ImageMapping, error) {
	var out []kubelet.ImageMapping
	for _, s := range f.runImages {
		m, err := kubelet.ParseImageMapping(s)
		if err != nil {
			return nil, fmt.Errorf("--run-image: %w", err)
		}
		if _, err := os.Stat(m.Path); err != nil {
			return nil, fmt.Errorf("--run-image %s: %w", s, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func (f *upFlags) resolveBinDir() (string, error) {
	if *f.binDir != "" {
		return *f.binDir, nil
	}
	matches, _ := filepath.Glob(filepath.Join(repoRoot(), ".cache", "k8s", "*", "kube-apiserver"))
	if len(matches) == 0 {
		return "", fmt.Errorf("no Kubernetes binaries in .cache/k8s: run make k8s-bins or pass --bin-dir")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// cmdUp checks its flags, starts the daemon in a network namespace of its
// own and waits until it says it is ready (or failed).
func cmdUp(args []string) error {
	f := newUpFlags("up")
	if err := f.fs.Parse(args); err != nil {
		return err
	}
	dir, err := filepath.Abs(*f.dir)
	if err != nil {
		return err
	}
	if pid := daemon.ReadPid(dir); pid != 0 && alive(pid) {
		return fmt.Errorf("a simulator already runs from %s (pid %d); run dynamo-sim down first", dir, pid)
	}
	buildLWS, err := f.check()
	if err != nil {
		return err
	}
	if err := resetStateDir(dir, false); err != nil {
		return err
	}
	if buildLWS {
		if err := startLWSBuild(dir, *f.lwsBuild); err != nil {
			return err
		}
	}
	start := time.Now()
	cmd, err := startDaemon(dir, *f.port, args)
	if err != nil {
		return err
	}
	// Reap the daemon if it dies while up still waits; up's exit then
	// leaves it to init.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, *f.timeout)
	defer cancelT()
	fmt.Printf("dynamo-sim: starting in %s (daemon pid %d, log %s)\n", dir, cmd.Process.Pid, daemon.LogPath(dir))
	if err := waitUp(ctx, dir, cmd.Process.Pid, start, exited); err != nil {
		return err
	}
	if *f.install == "helm" {
		return helmInstall(ctx, dir, *f.helm, *f.chart, *f.version)
	}
	return nil
}

// check checks everything a user can get wrong before up starts anything,
// and says whether LeaderWorkerSet's controller is still to be built.
func (f *upFlags) check() (buildLWS bool, err error) {
	if _, err := f.resolvePools(); err != nil {
		return false, err
	}
	if _, err := f.resolveRunImages(); err != nil {
		return false, err
	}
	if err := f.checkInstall(); err != nil {
		return false, err
	}
	if _, err := f.resolveBinDir(); err != nil {
		return false, err
	}
	if *f.lws != "" {
		if _, err := os.Stat(*f.lws); err != nil {
			if *f.lwsBuild == "" {
				return false, fmt.Errorf("LeaderWorkerSet: %w (run make lws, or pass --lws='' to run none)", err)
			}
			// Its cold build takes minutes: the simulator starts without it
			// rather than making every first up wait for it.
			buildLWS = true
		} else if _, err := os.Stat(*f.lwsCRDs); err != nil {
			return false, fmt.Errorf("LeaderWorkerSet: %w (run make lws, or pass --lws='' to run none)", err)
		}
	}
	if *f.operator != "" {
		if _, err := os.Stat(*f.operator); err != nil {
			return false, fmt.Errorf("operator binary: %w (run make build, or pass --operator='' to run none)", err)
		}
	}
	return buildLWS, nil
}

// checkInstall checks --install and what it needs.
func (f *upFlags) checkInstall() error {
	switch *f.install {
	case "process":
	case "helm":
		if *f.operator == "" {
			return fmt.Errorf("--install helm needs --operator: the program the operator's image runs")
		}
		for _, p := range []string{*f.helm, *f.chart} {
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("--install helm: %w (make helm builds the pinned helm)", err)
			}
		}
	default:
		return fmt.Errorf("--install %q: use process or helm", *f.install)
	}
	return nil
}

// startDaemon starts this executable as the daemon (dynamo-sim daemon
// args) in a new network namespace, its output in the daemon log, and
// records its pid.
func startDaemon(dir string, hostPort int, args []string) (*exec.Cmd, error) {
	// The listener is made here, on the host's loopback, and handed to the
	// daemon: it keeps the host's namespace when the daemon leaves it.
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(hostPort))
	if err != nil {
		return nil, fmt.Errorf("host port for the API server: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	lnFile, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, err
	}
	_ = ln.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dargs := append([]string{"daemon", "--host-port=" + strconv.Itoa(port), "--listen-fd=3"}, args...)
	dargs = append(dargs, "--state-dir="+dir)
	logFile, err := os.Create(daemon.LogPath(dir))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, dargs...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{lnFile}
	cmd.SysProcAttr = cluster.NamespaceAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the simulator daemon: %w", err)
	}
	_ = lnFile.Close()
	_ = logFile.Close()
	if err := os.WriteFile(daemon.PidPath(dir), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return nil, err
	}
	return cmd, nil
}

// waitUp prints the daemon's steps until it is ready, and how to reach it;
// when it fails or exits first, the end of its log, and it stops it.
func waitUp(ctx context.Context, dir string, pid int, start time.Time, exited <-chan error) error {
	waitCtx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	go func() {
		select {
		case <-exited:
			stopWait()
		case <-waitCtx.Done():
		}
	}()
	st, err := daemon.NewClient(dir).WaitReady(waitCtx, func(s daemon.State) {
		if s.Step != "" {
			fmt.Printf("  [%5.1fs] %s\n", time.Since(start).Seconds(), s.Step)
		}
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "dynamo-sim: the simulator did not come up; last lines of %s:\n%s\n", daemon.LogPath(dir), tail(daemon.LogPath(dir), 15))
		_ = stopDaemon(dir, pid, 20*time.Second)
		return err
	}
	fmt.Printf("dynamo-sim: ready in %.1fs (control plane healthy after %.1fs)\n", time.Since(start).Seconds(), st.ClusterHealthy.Seconds())
	fmt.Printf("  kubectl --kubeconfig %s get nodes\n", st.Kubeconfig)
	fmt.Printf("  export KUBECONFIG=%s\n", st.Kubeconfig)
	for _, op := range st.Operators {
		fmt.Printf("  %s (%s) pid %d, log %s\n", op.Name, st.Mode, op.Pid, op.Log)
	}
	return nil
}

func cmdDaemon(args []string) error {
	f := newUpFlags("daemon")
	hostPort := f.fs.Int("host-port", 0, "host port of the forwarded listener")
	fd := f.fs.Int("listen-fd", 0, "file descriptor of the host listener")
	if err := f.fs.Parse(args); err != nil {
		return err
	}
	pools, err := f.resolvePools()
	if err != nil {
		return err
	}
	binDir, err := f.resolveBinDir()
	if err != nil {
		return err
	}
	runImages, err := f.resolveRunImages()
	if err != nil {
		return err
	}
	var ln net.Listener
	if *fd != 0 {
		if ln, err = net.FileListener(os.NewFile(uintptr(*fd), "host-listener")); err != nil {
			return fmt.Errorf("host listener: %w", err)
		}
	}
	crds := *f.crdDir
	if *f.install == "helm" {
		// The chart applies the CRDs (its apply-crds init container).
		crds = ""
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = daemon.Run(ctx, daemon.Options{
		Dir: *f.dir, BinDir: binDir, CRDDir: crds, LWS: *f.lws, LWSCRDDir: *f.lwsCRDs, Operator: *f.operator, OperatorArgs: f.operatorArgs,
		Mode: *f.mode, Pools: pools, PodReadyDelay: *f.podReadyDelay, HostListener: ln, HostPort: *hostPort,
		WatchPid: *f.watchPid, RunImages: runImages, ModelLoadDelay: *f.modelLoad, NoOperatorProcess: *f.install == "helm",
	}, os.Stderr)
	_ = os.Remove(daemon.PidPath(*f.dir))
	return err
}

func cmdDown(args []string) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	pid := daemon.ReadPid(*dir)
	if pid == 0 || !alive(pid) {
		fmt.Println("dynamo-sim: not running")
		return resetStateDir(*dir, true)
	}
	start := time.Now()
	if err := stopDaemon(*dir, pid, 30*time.Second); err != nil {
		return err
	}
	fmt.Printf("dynamo-sim: stopped in %.1fs; logs kept in %s\n", time.Since(start).Seconds(), filepath.Join(*dir, "logs"))
	return resetStateDir(*dir, true)
}

// stopDaemon asks the daemon to stop (SIGTERM) and kills it after grace.
// Its children die with it (Pdeathsig), its namespace with the last of them.
func stopDaemon(dir string, pid int, grace time.Duration) error {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if exited(pid, grace, 100*time.Millisecond) != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if exited(pid, 200*time.Millisecond, 50*time.Millisecond) != nil {
			return fmt.Errorf("daemon pid %d survives SIGKILL", pid)
		}
	}
	_ = os.Remove(daemon.PidPath(dir))
	return nil
}

// exited waits up to within for the daemon pid to be gone.
func exited(pid int, within, every time.Duration) error {
	return await.Until(context.Background(), fmt.Sprintf("daemon pid %d gone", pid), func() error {
		if alive(pid) {
			return await.ErrNotYet
		}
		return nil
	}, await.Within(within), await.Every(every))
}

// alive reports whether pid runs and is a simulator daemon (a zombie does
// not count, nor another program that got the pid of a daemon long gone:
// down must never signal it).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	// A prefix, so the CLI's own test binary (dynamo-sim.test) counts too.
	if len(args) < 2 || !strings.HasPrefix(filepath.Base(args[0]), "dynamo-sim") || args[1] != "daemon" {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// resetStateDir empties the state directory, so every up starts a fresh
// cluster; down keeps the logs of the run for a post-mortem.
func resetStateDir(dir string, keepLogs bool) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if keepLogs && (e.Name() == "logs" || e.Name() == "daemon.log") {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startLWSBuild runs the LeaderWorkerSet controller's build (tools/lws/
// build.sh, which make lws runs too) in the background, on the host side
// where the Go module proxy is reachable, at a low priority: the simulator
// comes up meanwhile and its daemon starts the controller once the binary
// appears. The build outlives the simulator if it is stopped first: what it
// built is cached for the next up.
func startLWSBuild(dir, script string) error {
	log, err := os.Create(filepath.Join(dir, "lws-build.log"))
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command("nice", "-n", "10", script)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a ^C to up does not stop a build others may
	// wait for (it holds the build's lock).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("building the LeaderWorkerSet controller (%s): %w", script, err)
	}
	fmt.Printf("dynamo-sim: the LeaderWorkerSet controller is not built yet: building it in the background (pid %d, log %s);\n"+
		"  the simulator starts it once built; until then a multinode graph says it waits for the LeaderWorkerSet API (make lws builds it beforehand)\n",
		cmd.Process.Pid, log.Name())
	go func() { _ = cmd.Wait() }()
	return nil
}
