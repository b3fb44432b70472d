package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
	"github.com/dynamoctl/dynamo-operator/sim/faults"
)

func cmdFault(args []string) error {
	fs := flag.NewFlagSet("fault", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	node := fs.String("node", "", "target node (default: chosen with --seed)")
	pod := fs.String("pod", "", "target pod, namespace/name (crash-loop, pod-kill, worker-restart, lora-forget; default: chosen with --seed)")
	ns := fs.String("namespace", "", "namespace (lease-expiry; narrows crash-loop, pod-kill, worker-restart, lora-forget)")
	secret := fs.String("secret", "", "webhook certificate Secret, namespace/name (cert-expiry; default: the simulator's operator's)")
	seed := fs.Uint64("seed", 1, "seed of random choices")
	dur := fs.Duration("duration", 0, "how long the fault lasts where it has a length (operator-kill, apiserver-restart)")
	count := fs.Int("count", 1, "GPUs that fail (gpu-failure)")
	image := fs.String("image", "", "image whose pulls fail (image-pull-failure, image-pull-restore)")
	operator := fs.String("operator", "", "operator to kill or restart (default: the primary one; see dynamo-sim status)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: dynamo-sim fault KIND [flags]\n\nkinds:")
		tw := tabwriter.NewWriter(os.Stderr, 2, 4, 2, ' ', 0)
		for _, k := range faults.KindNames() {
			fmt.Fprintf(tw, "  %s\t%s\n", k, faults.Kinds[k])
		}
		_ = tw.Flush()
		fmt.Fprintln(os.Stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fs.Usage() // asked for: not an error, as dynamo-sim -h
		return nil
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs.Usage()
		return fmt.Errorf("fault needs a KIND")
	}
	kind := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	msg, err := daemon.NewClient(*dir).Fault(ctx, faults.Request{
		Kind: kind, Node: *node, Pod: *pod, Namespace: *ns, Seed: *seed, Duration: *dur, Count: *count, Operator: *operator, Secret: *secret, Image: *image,
	})
	if err != nil {
		return err
	}
	fmt.Println(msg)
	return nil
}

func cmdWorkers(args []string) error {
	fs := flag.NewFlagSet("workers", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	asJSON := fs.Bool("json", false, "print the calls as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := daemon.NewClient(*dir)
	calls, err := cl.WorkerCalls(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(calls)
	}
	serving, err := cl.Workers(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("%d fake workers serving\n", len(serving))
	for pod, addr := range serving {
		fmt.Printf("  %s at %s\n", pod, addr)
	}
	fmt.Printf("\n%d calls\n", len(calls))
	for _, c := range calls {
		fmt.Printf("  %s %s %s %s -> %d %s\n", c.Time.Format(time.TimeOnly), c.Pod, c.Method, c.Path, c.Status, c.Body)
	}
	return nil
}

func cmdKubeconfig(args []string) error {
	fs := flag.NewFlagSet("kubeconfig", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := requireUp(*dir); err != nil {
		return err
	}
	fmt.Println(cluster.HostKubeconfig(*dir))
	return nil
}

// cmdExec runs a command in the simulator's network namespace (with
// nsenter), where pod addresses are reachable: e.g. curl a fake worker.
func cmdExec(args []string) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("exec needs a command: dynamo-sim exec -- CMD ARGS")
	}
	if err := requireUp(*dir); err != nil {
		return err
	}
	pid := daemon.ReadPid(*dir)
	nsArgs := []string{"-t", strconv.Itoa(pid), "-n"}
	if os.Getuid() != 0 {
		nsArgs = append(nsArgs, "-U", "--preserve-credentials")
	}
	bin, err := exec.LookPath("nsenter")
	if err != nil {
		return fmt.Errorf("exec needs nsenter (util-linux): %w", err)
	}
	argv := append([]string{"nsenter"}, nsArgs...)
	argv = append(argv, fs.Args()...)
	// Inside, the API server is at its own port, not the forwarded one.
	env := append(os.Environ(), "KUBECONFIG="+filepath.Join(*dir, "admin.kubeconfig"))
	return syscall.Exec(bin, argv, env)
}

// cmdOperator starts and stops extra operator processes, e.g. a second
// namespace-scoped operator beside a cluster-wide one.
func cmdOperator(args []string) error {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	ns := fs.String("namespace", "", "start: namespace-scoped in this namespace (default: cluster-wide)")
	kill := fs.Bool("kill", false, "stop: SIGKILL instead of SIGTERM")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: dynamo-sim operator start NAME [--namespace NS] [-- OPERATOR FLAGS]\n       dynamo-sim operator stop NAME [--kill]")
		fs.PrintDefaults()
	}
	if len(args) < 2 {
		fs.Usage()
		return fmt.Errorf("operator needs start|stop NAME")
	}
	verb, name := args[0], args[1]
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := daemon.NewClient(*dir)
	var msg string
	var err error
	switch verb {
	case "start":
		msg, err = cl.StartOperator(ctx, daemon.OperatorRequest{Name: name, Namespace: *ns, Args: fs.Args()})
	case "stop":
		msg, err = cl.StopOperator(ctx, name, *kill)
	default:
		return fmt.Errorf("operator %s: use start or stop", verb)
	}
	if err != nil {
		return err
	}
	fmt.Println(msg)
	return nil
}
