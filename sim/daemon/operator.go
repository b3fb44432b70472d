package daemon

import (
	"fmt"
	"sync"
	"time"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// operatorProc runs the operator binary as a process inside the
// simulator's namespace, as a pod would run it, with its own user.
type operatorProc struct {
	bin, logDir, kubeconfig string
	args                    []string

	mu       sync.Mutex
	proc     *cluster.Process
	restarts int
}

func (o *operatorProc) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc != nil {
		if exited, _ := o.proc.Exited(); !exited {
			return fmt.Errorf("the operator is already running (pid %d)", o.proc.Pid())
		}
	}
	p, err := cluster.StartProcess("operator", o.logDir, o.bin, o.args, []string{"KUBECONFIG=" + o.kubeconfig})
	if err != nil {
		return err
	}
	o.proc = p
	return nil
}

// stop ends the operator: gracefully (SIGTERM, as a pod deletion does) or
// at once (SIGKILL, as a crash or an OOM kill does).
func (o *operatorProc) stop(kill bool) {
	o.mu.Lock()
	p := o.proc
	o.mu.Unlock()
	if p == nil {
		return
	}
	if kill {
		p.Kill()
	} else {
		p.Stop(15 * time.Second)
	}
}

func (o *operatorProc) restart(kill bool) error {
	o.stop(kill)
	o.mu.Lock()
	o.restarts++
	o.mu.Unlock()
	return o.start()
}

func (o *operatorProc) status() (pid int, running bool, restarts int, log string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc == nil {
		return 0, false, o.restarts, ""
	}
	exited, _ := o.proc.Exited()
	return o.proc.Pid(), !exited, o.restarts, o.proc.Log
}
