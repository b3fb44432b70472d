package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
)

// Sim is one simulator (bin/dynamo-sim) with its own state directory.
type Sim struct {
	// Bin is bin/dynamo-sim; Dir its state directory.
	Bin, Dir string
	// BinDir holds the Kubernetes binaries (KUBEBUILDER_ASSETS); empty
	// lets dynamo-sim find them in .cache/k8s.
	BinDir string
	// Out receives dynamo-sim's output; nil discards it.
	Out *os.File
}

// UpOptions say what the simulator starts with. By default no operator and
// no CRDs: the scenarios install releases with helm, whose operator pods
// apply their own CRDs. The feature files on the simulator start it with
// the working tree's operator (Operator), installed by its chart (Helm).
type UpOptions struct {
	// Operator is the operator binary the simulator runs, with the CRDs;
	// empty: none.
	Operator string
	// Helm, with Operator, installs it with the chart by this helm binary
	// (its pods run the operator image); empty: a process of the simulator.
	Helm string
	// Releases whose images the kubelet runs (as their binaries).
	Releases []*Release
	// Pools replace the default GPU node pools (dynamo-sim --pool).
	Pools []string
	// PodReadyDelay is the time from scheduling to Ready (default 1s).
	PodReadyDelay time.Duration
	// Args are further dynamo-sim up flags.
	Args []string
}

// Up starts the simulator as o says (by default with no operator and no
// CRDs). It dies with this process (--watch-pid) should the caller be
// killed before Down. Both simulator suites start theirs here.
func (s *Sim) Up(ctx context.Context, o UpOptions) error {
	delay := o.PodReadyDelay
	if delay == 0 {
		delay = time.Second
	}
	args := []string{"up", "--state-dir=" + s.Dir, "--watch-pid=" + strconv.Itoa(os.Getpid()),
		"--pod-ready-delay=" + delay.String()}
	switch {
	case o.Operator == "":
		args = append(args, "--install=process", "--operator=", "--crds=")
	case o.Helm != "":
		args = append(args, "--operator="+o.Operator, "--install=helm", "--helm="+o.Helm)
	default:
		args = append(args, "--operator="+o.Operator)
	}
	for _, r := range o.Releases {
		args = append(args, "--run-image="+r.RunImage())
	}
	for _, p := range o.Pools {
		args = append(args, "--pool="+p)
	}
	args = append(args, o.Args...)
	if s.BinDir != "" {
		args = append(args, "--bin-dir="+s.BinDir)
	}
	cmd := exec.CommandContext(ctx, s.Bin, args...)
	if s.Out != nil {
		cmd.Stdout, cmd.Stderr = s.Out, s.Out
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s up: %w (make sim-build builds it; its log: %s)", s.Bin, err, daemon.LogPath(s.Dir))
	}
	return nil
}

// Down stops the simulator.
func (s *Sim) Down(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, s.Bin, "down", "--state-dir="+s.Dir)
	if s.Out != nil {
		cmd.Stdout, cmd.Stderr = s.Out, s.Out
	}
	return cmd.Run()
}

// MoveLogs moves the stopped simulator's logs to dest (replacing what dest
// held), where the next simulator in the same directory leaves them.
func (s *Sim) MoveLogs(dest string) error {
	logs := filepath.Join(s.Dir, "logs")
	if _, err := os.Stat(logs); err != nil {
		return fmt.Errorf("keeping the simulator's logs: %w", err)
	}
	if err := os.RemoveAll(dest); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	if err := os.Rename(logs, dest); err != nil {
		return fmt.Errorf("keeping the simulator's logs: %w", err)
	}
	return nil
}

// Kubeconfig is the host's kubeconfig of the simulator (an administrator).
func (s *Sim) Kubeconfig() string { return cluster.HostKubeconfig(s.Dir) }

// AuditLog is the API server's audit log.
func (s *Sim) AuditLog() string { return filepath.Join(s.Dir, "logs", "audit.log") }

// PodLogs is where the kubelet keeps every pod's log.
func (s *Sim) PodLogs() string { return filepath.Join(s.Dir, "logs", "pods") }

// Control is the simulator's control client (faults, operators, workers).
func (s *Sim) Control() *daemon.Client { return daemon.NewClient(s.Dir) }

// Config is a rest config for the simulator, with room for a scenario's
// bursts (watchers, the admission client).
func (s *Sim) Config() (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig())
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 200, 400
	return rc, nil
}

// Client is a controller-runtime client for the simulator with the
// operator's scheme.
func (s *Sim) Client() (client.Client, *rest.Config, error) {
	rc, err := s.Config()
	if err != nil {
		return nil, nil, err
	}
	scheme := testenv.NewScheme()
	// The scenarios compare the served CRDs with a release's.
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	return c, rc, err
}

// WritesBy lists a user's writes from the audit log.
func (s *Sim) WritesBy(user string) ([]cluster.Write, error) {
	return cluster.WritesBy(s.AuditLog(), user)
}

// ServiceAccountUser is the audit user of a ServiceAccount.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}
