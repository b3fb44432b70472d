package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// multinodeDCD is a worker of nodes pods per replica, gpus GPUs per pod,
// running command and args.
func multinodeDCD(nodes int32, gpus string, command []string, args ...string) *v1alpha1.DynamoComponentDeployment {
	return builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		Replicas(2).
		Multinode(nodes).
		Resources(&v1alpha1.Resources{Limits: &v1alpha1.ResourceItem{GPU: gpus}}).
		Command(command, args...)).Obj()
}

func mustLWS(t *testing.T, dcd *v1alpha1.DynamoComponentDeployment) (lws *lwsv1.LeaderWorkerSet, leader, worker *corev1.Container) {
	t.Helper()
	lws, err := LeaderWorkerSet(dcd, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return lws, findContainer(lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers, MainContainerName),
		findContainer(lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers, MainContainerName)
}

// waitMaster is a vLLM worker's wait for its leader's master port.
func waitMaster(port string) string {
	return `i=0; until python3 -c "import socket; socket.create_connection(('$LWS_LEADER_ADDRESS', ` + port + `), 2)" 2>/dev/null; ` +
		`do i=$((i+1)); [ "$i" -ge 900 ] && { echo "no master at $LWS_LEADER_ADDRESS:` + port + `" >&2; exit 1; }; sleep 2; done; `
}

var pyVLLM = []string{"python3", "-m", "dynamo.vllm"}

func TestLeaderWorkerSetShape(t *testing.T) {
	lws, leader, worker := mustLWS(t, multinodeDCD(4, "8", pyVLLM, "--tensor-parallel-size", "16", "--pipeline-parallel-size", "2"))
	tpl := lws.Spec.LeaderWorkerTemplate
	if *lws.Spec.Replicas != 2 || *tpl.Size != 4 {
		t.Errorf("replicas %d size %d, want 2 groups of 4", *lws.Spec.Replicas, *tpl.Size)
	}
	if tpl.RestartPolicy != lwsv1.RecreateGroupOnPodRestart {
		t.Errorf("restartPolicy %q: a group must restart whole", tpl.RestartPolicy)
	}
	if r := tpl.LeaderTemplate.Labels[LabelMultinodeRole]; r != RoleLeader {
		t.Errorf("leader role label %q", r)
	}
	if r := tpl.WorkerTemplate.Labels[LabelMultinodeRole]; r != RoleWorker {
		t.Errorf("worker role label %q", r)
	}
	if leader.ReadinessProbe == nil || worker.ReadinessProbe != nil || worker.LivenessProbe != nil || worker.StartupProbe != nil {
		t.Error("the leader keeps the runtime's probes, a vLLM worker has none")
	}
	for _, c := range []*corev1.Container{leader, worker} {
		if v, _ := envValue(c.Env, "DYN_MULTINODE_NODE_COUNT"); v != "4" {
			t.Errorf("DYN_MULTINODE_NODE_COUNT = %q, want 4", v)
		}
		if q := c.Resources.Limits["nvidia.com/gpu"]; q.Value() != 8 {
			t.Errorf("GPUs per pod %s, want 8 as written", q.String())
		}
	}
	if diff := cmp.Diff(map[string]string{LabelComponent: "g-worker", LabelMultinodeRole: RoleLeader}, Service(builders.MakeGraphComponent("g", "Worker", "ns", builders.MakeService().Type(v1alpha1.ComponentTypeWorker).Image(testImage).
		MultinodeSpec(&v1alpha1.MultinodeSpec{NodeCount: 2})).Obj()).Spec.Selector); diff != "" {
		t.Errorf("a multinode Service selects its leaders (-want +got):\n%s", diff)
	}
}

func TestLaunchFlags(t *testing.T) {
	cases := map[string]struct {
		dcd            *v1alpha1.DynamoComponentDeployment
		leader, worker string // the command line, joined by spaces
	}{"vLLM tensor parallel over nodes: multiprocessing, headless workers": {
		dcd: multinodeDCD(2, "1", pyVLLM, "--model", "m", "--tensor-parallel-size", "2"),
		leader: "python3 -m dynamo.vllm --model m --tensor-parallel-size 2 --distributed-executor-backend mp --nnodes 2 " +
			"--node-rank 0 --master-addr $(LWS_LEADER_ADDRESS) --master-port 29500",
		worker: "/bin/sh -c " + waitMaster("29500") + "exec python3 -m dynamo.vllm --model m --tensor-parallel-size 2 --distributed-executor-backend mp --nnodes 2 " +
			"--node-rank $(LWS_WORKER_INDEX) --master-addr $(LWS_LEADER_ADDRESS) --master-port 29500 --headless",
	}, "vLLM: the user's own flags are kept, ours only where absent": {
		dcd: multinodeDCD(2, "4", pyVLLM, "--tensor-parallel-size=8", "--master-port", "1234", "--nnodes", "2"),
		leader: "python3 -m dynamo.vllm --tensor-parallel-size=8 --master-port 1234 --nnodes 2 " +
			"--distributed-executor-backend mp --node-rank 0 --master-addr $(LWS_LEADER_ADDRESS)",
		worker: "/bin/sh -c " + waitMaster("1234") + "exec python3 -m dynamo.vllm --tensor-parallel-size=8 --master-port 1234 --nnodes 2 " +
			"--distributed-executor-backend mp --node-rank $(LWS_WORKER_INDEX) --master-addr $(LWS_LEADER_ADDRESS) --headless",
	}, "vLLM data parallel beyond one node: hybrid load balancing, start rank per node": {
		dcd: multinodeDCD(2, "4", pyVLLM, "--data-parallel-size", "8"),
		leader: "python3 -m dynamo.vllm --data-parallel-size 8 --data-parallel-hybrid-lb --data-parallel-size-local 4 " +
			"--data-parallel-start-rank 0 --data-parallel-address $(LWS_LEADER_ADDRESS) --data-parallel-rpc-port 13445",
		worker: "/bin/sh -c exec python3 -m dynamo.vllm --data-parallel-size 8 --data-parallel-hybrid-lb --data-parallel-size-local 4 " +
			"--data-parallel-start-rank $((4*$(LWS_WORKER_INDEX))) --data-parallel-address $(LWS_LEADER_ADDRESS) --data-parallel-rpc-port 13445",
	}, "SGLang from backendFramework, flags at the end of a shell script": {
		dcd: func() *v1alpha1.DynamoComponentDeployment {
			d := multinodeDCD(3, "8", []string{"sh", "-c"}, "python3 -m dynamo.sglang --tp-size 24")
			d.Spec.BackendFramework = v1alpha1.BackendFrameworkSGLang
			return d
		}(),
		leader: "sh -c python3 -m dynamo.sglang --tp-size 24 --dist-init-addr $(LWS_LEADER_ADDRESS):29500 --nnodes 3 --node-rank 0",
		worker: "sh -c python3 -m dynamo.sglang --tp-size 24 --dist-init-addr $(LWS_LEADER_ADDRESS):29500 --nnodes 3 --node-rank $(LWS_WORKER_INDEX)",
	}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, leader, worker := mustLWS(t, tc.dcd)
			line := func(c *corev1.Container) string { return strings.Join(append(c.Command, c.Args...), " ") }
			if got := line(leader); got != tc.leader {
				t.Errorf("leader:\n got %s\nwant %s", got, tc.leader)
			}
			if got := line(worker); got != tc.worker {
				t.Errorf("worker:\n got %s\nwant %s", got, tc.worker)
			}
		})
	}
}

func TestTRTLLMLaunchesOverSSH(t *testing.T) {
	dcd := multinodeDCD(3, "4", []string{"python3", "-m", "dynamo.trtllm"}, "--extra-engine-args", "/w/it's.yaml")
	if !NeedsMPISSHSecret(dcd) {
		t.Fatal("a multinode TRT-LLM component needs its SSH key Secret")
	}
	lws, leader, worker := mustLWS(t, dcd)
	script := leader.Args[0]
	for _, want := range []string{
		`mpirun --allow-run-as-root --oversubscribe -n 12 -H "$LWS_LEADER_ADDRESS","${LWS_LEADER_ADDRESS%%.*}-1.${LWS_LEADER_ADDRESS#*.}","${LWS_LEADER_ADDRESS%%.*}-2.${LWS_LEADER_ADDRESS#*.}"`,
		`-x DYN_MULTINODE_NODE_COUNT`,
		// The user's command, quoted once for sh and once for bash -c.
		`bash -c 'trtllm-llmapi-launch python3 -m dynamo.trtllm --extra-engine-args '\''/w/it'\''\'\'''\''s.yaml'\'''`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("leader script lacks %s:\n%s", want, script)
		}
	}
	if !strings.Contains(worker.Args[0], "exec /usr/sbin/sshd -D") || worker.ReadinessProbe.TCPSocket == nil {
		t.Errorf("a worker runs sshd and is ready when it listens: %v", worker.Args)
	}
	for _, pod := range []corev1.PodSpec{lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec, lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec} {
		found := false
		for _, v := range pod.Volumes {
			found = found || (v.Secret != nil && v.Secret.SecretName == "g-worker-mpi-ssh")
		}
		if !found {
			t.Error("a pod does not mount the SSH key Secret")
		}
	}
	if NeedsMPISSHSecret(multinodeDCD(2, "1", pyVLLM, "--tensor-parallel-size", "2")) {
		t.Error("only TRT-LLM needs the SSH key Secret")
	}
}

func TestMultinodeRefusesWhatCannotSpanNodes(t *testing.T) {
	_, err := LeaderWorkerSet(multinodeDCD(2, "1", []string{"./serve"}), nil, Options{})
	wantFieldError(t, err, "spec.backendFramework", "backendFramework")
	_, err = LeaderWorkerSet(multinodeDCD(2, "8", pyVLLM, "--tensor-parallel-size", "8"), nil, Options{})
	wantFieldError(t, err, "spec.multinode.nodeCount", "exceeds the GPUs of one pod (8)")
	d := multinodeDCD(2, "8", pyVLLM)
	d.Spec.BackendFramework = "jax"
	_, err = LeaderWorkerSet(d, nil, Options{})
	wantFieldError(t, err, "spec.backendFramework", "Unsupported")
}
