package daemon

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dynamoctl/dynamo-operator/sim/cluster"
)

// crashBackoff is how long a crashed operator waits before it runs again,
// as a kubelet restarts a failed container.
const crashBackoff = 2 * time.Second

// operatorProc runs the operator binary as a process inside the
// simulator's namespace, as a pod would run it, with its own user. Like a
// kubelet it starts the operator again when it exits on its own.
type operatorProc struct {
	name                    string
	bin, logDir, kubeconfig string
	args                    []string
	log                     io.Writer

	mu       sync.Mutex
	proc     *cluster.Process
	wanted   bool
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
	p, err := cluster.StartProcess(o.name, o.logDir, o.bin, o.args, []string{"KUBECONFIG=" + o.kubeconfig})
	if err != nil {
		return err
	}
	o.proc, o.wanted = p, true
	go o.supervise(p)
	return nil
}

// supervise restarts the operator if p exits while it should run.
func (o *operatorProc) supervise(p *cluster.Process) {
	<-p.Done()
	time.Sleep(crashBackoff)
	o.mu.Lock()
	again := o.wanted && o.proc == p
	if again {
		o.restarts++
	}
	o.mu.Unlock()
	if !again {
		return
	}
	if o.log != nil {
		fmt.Fprintf(o.log, "dynamo-sim: %v; starting it again\n", p.ExitError())
	}
	if err := o.start(); err != nil && o.log != nil {
		fmt.Fprintf(o.log, "dynamo-sim: starting the operator again: %v\n", err)
	}
}

// stop ends the operator: gracefully (SIGTERM, as a pod deletion does) or
// at once (SIGKILL, as a crash or an OOM kill does). It stays down until
// start.
func (o *operatorProc) stop(kill bool) {
	o.mu.Lock()
	p := o.proc
	o.wanted = false
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
