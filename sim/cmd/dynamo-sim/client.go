package main

import (
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
)

// kubeClient reaches the simulator's API server from the host, with strict
// field validation as kubectl does.
func kubeClient(dir string) (client.Client, error) {
	kc := cluster.HostKubeconfig(dir)
	if _, err := os.Stat(kc); err != nil {
		return nil, fmt.Errorf("no kubeconfig in %s: is the simulator up? (dynamo-sim up)", dir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
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
