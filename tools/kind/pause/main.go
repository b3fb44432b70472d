// Command pause is the sandbox (pause) container's process of the kind node
// image: it holds a pod's namespaces, reaps the zombies it inherits as PID
// 1, and exits on SIGINT or SIGTERM, as Kubernetes' own pause does. It is
// built here because that one is C source outside any Go module and the
// node image is built without a registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
