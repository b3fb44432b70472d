// Command dynamo-sim runs the simulator: a real Kubernetes control plane
// with fake GPU nodes (KWOK), fake Dynamo workers and the operator, in a
// network namespace of its own, reachable from the host through a
// kubeconfig on a forwarded loopback port.
//
//	dynamo-sim up [flags]          start it (a background daemon) and wait until ready
//	dynamo-sim apply -f FILE       server-side apply manifests
//	dynamo-sim wait dgd/NAME       wait until a graph is Ready, showing its progress
//	dynamo-sim status              graphs, nodes with GPUs used, pods per node
//	dynamo-sim fault KIND [flags]  inject a fault
//	dynamo-sim workers             fake workers and the calls they received
//	dynamo-sim operator start|stop another operator process (e.g. a namespace-scoped one)
//	dynamo-sim kubeconfig          print the kubeconfig path
//	dynamo-sim exec -- CMD         run CMD inside the simulator's network namespace
//	dynamo-sim down                stop everything
//	dynamo-sim gpus --kubeconfig K give another cluster's workers (kind's) GPUs
//	dynamo-sim audit-policy        print the API server's audit policy (for kind's)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const usage = `dynamo-sim: the Dynamo operator simulator

  up          start the simulator in the background and wait until it is ready
  apply       server-side apply manifests: apply -f FILE|DIR [-n NAMESPACE]
  wait        wait until graphs are Ready: wait dgd/NAME [-n NAMESPACE] [--timeout 3m]
  status      graphs, GPU nodes and the pods on them
  fault       inject a fault: fault KIND [--node N] [--pod NS/NAME] [--namespace NS] [--seed S] [--duration D]
  workers     fake Dynamo workers and the calls they received
  operator    start or stop another operator process: operator start NAME [--namespace NS] [-- FLAGS]
  kubeconfig  print the path of the kubeconfig for kubectl
  exec        run a command inside the simulator's network namespace: exec -- CMD ARGS
  helm        the pinned helm against the simulator: helm -- install|upgrade|uninstall ...
  down        stop the simulator and everything it started
  gpus        give another cluster's nodes GPUs as a device plugin and GPU feature discovery do:
              gpus --kubeconfig FILE [--pool SPEC] [NODE...] (default: every node but the control plane)
  audit-policy
              print the simulator's audit policy (the operators' writes), for another cluster's API server

Every command takes --state-dir (default: $DYNAMO_SIM_DIR, else .cache/sim of the repository).
apply, wait and status take --kubeconfig FILE to work on another cluster (make kind's) instead.
Run "dynamo-sim COMMAND -h" for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"up": cmdUp, "daemon": cmdDaemon, "down": cmdDown, "status": cmdStatus, "apply": cmdApply,
		"wait": cmdWait, "fault": cmdFault, "operator": cmdOperator, "workers": cmdWorkers, "kubeconfig": cmdKubeconfig, "exec": cmdExec, "helm": cmdHelm,
		"gpus": cmdGPUs, "audit-policy": cmdAuditPolicy,
	}
	name := os.Args[1]
	if name == "-h" || name == "--help" || name == "help" {
		fmt.Print(usage)
		return
	}
	run, ok := cmds[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "dynamo-sim: unknown command %q\n\n%s", name, usage)
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "dynamo-sim %s: %v\n", name, err)
		os.Exit(1)
	}
}

// stateDirFlag registers --state-dir on fs.
func stateDirFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("DYNAMO_SIM_DIR")
	if def == "" {
		def = filepath.Join(repoRoot(), ".cache", "sim")
	}
	return fs.String("state-dir", def, "simulator state directory (kubeconfig, logs, control socket)")
}

// repoRoot is the nearest parent of the working directory holding this
// project's go.mod, else the working directory.
func repoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/dynamoctl/dynamo-operator\n") {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
