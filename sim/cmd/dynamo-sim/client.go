package main

import (
	"flag"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
)

// kubeconfigFlag registers --kubeconfig on fs: the commands that only talk
// to the API server (apply, wait, status, gpus) then reach that cluster (a
// kind cluster, make kind) rather than the simulator's.
func kubeconfigFlag(fs *flag.FlagSet) *string {
	return fs.String("kubeconfig", "", "another cluster's kubeconfig (e.g. make kind's) instead of the simulator's")
}

// restConfig is the configuration of kubeconfig when set, else of the
// simulator's API server seen from the host.
func restConfig(dir, kubeconfig string) (*rest.Config, error) {
	kc := kubeconfig
	if kc == "" {
		kc = cluster.HostKubeconfig(dir)
		if _, err := os.Stat(kc); err != nil {
			return nil, fmt.Errorf("no kubeconfig in %s: is the simulator up? (dynamo-sim up)", dir)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// kubeClient reaches the simulator's API server from the host, or the
// cluster of kubeconfig when set, with strict field validation as kubectl
// does.
func kubeClient(dir, kubeconfig string) (client.Client, error) {
	cfg, err := restConfig(dir, kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the simulator: %w", err)
	}
	return client.WithFieldValidation(c, metav1.FieldValidationStrict), nil
}

func requireUp(dir string) error {
	pid := daemon.ReadPid(dir)
	if pid == 0 || !alive(pid) {
		return fmt.Errorf("the simulator is not running in %s (dynamo-sim up)", dir)
	}
	return nil
}
