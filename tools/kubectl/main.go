// Command kubectl is Kubernetes' kubectl at the version the simulator's
// control plane runs (go.mod), for the documentation's commands on the
// simulator (make kubectl, make features-sim): as k8s.io/kubernetes's
// cmd/kubectl, whose module cannot be required alone.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
