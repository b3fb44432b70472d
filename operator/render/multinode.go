package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// A multinode service (multinode.nodeCount >= 2) runs each replica as a
// group of nodeCount pods: a leader and nodeCount-1 workers, which the
// backend's launcher joins into one engine. The group is a LeaderWorkerSet
// (sigs.k8s.io/lws): one per component, size nodeCount, replicas the
// service's replicas. LeaderWorkerSet gives every pod of a group
// LWS_LEADER_ADDRESS (the leader's stable DNS name) and LWS_WORKER_INDEX
// (0 on the leader), which the kubelet substitutes for $(VAR) in a
// container's command and args; the launch flags below refer to them so
// that one template serves every group.

// LabelMultinodeRole is "leader" or "worker" on the pods of a multinode
// component; only leaders serve, so the component's Services select them.
const LabelMultinodeRole = "nvidia.com/dynamo-multinode-role"

// Values of LabelMultinodeRole.
const (
	RoleLeader = "leader"
	RoleWorker = "worker"
)

// LWS addresses, as the kubelet substitutes them in command and args.
const (
	lwsLeaderAddress = "$(" + lwsv1.LwsLeaderAddress + ")"
	lwsWorkerIndex   = "$(" + lwsv1.LwsWorkerIndex + ")"
)

// Ports the launchers coordinate on, as Dynamo documents them.
const (
	vllmMasterPort         = "29500" // vLLM's default, as Dynamo passes it
	vllmDataParallelRPC    = "13445"
	sglangDistInitPort     = "29500"
	mpiSSHPort             = 2222
	mpiSSHMountPath        = "/ssh-pk"
	mpiSSHVolumeName       = "mpi-ssh-keys"
	mpiSSHPrivateKey       = "private.key"
	mpiSSHPublicKey        = "private.key.pub"
	mpiSSHSecretNameSuffix = "-mpi-ssh"
)

// IsMultinode reports whether each replica of the component spans several
// nodes, i.e. renders as a LeaderWorkerSet.
func IsMultinode(dcd *v1alpha1.DynamoComponentDeployment) bool {
	return nodeCount(dcd) > 1
}

// MPISSHSecretName is the Secret holding the SSH key pair a TRT-LLM leader
// starts its workers' ranks with (mpirun over SSH); the controller generates
// it once per component (see NeedsMPISSHSecret).
func MPISSHSecretName(dcd *v1alpha1.DynamoComponentDeployment) string {
	return dcd.Name + mpiSSHSecretNameSuffix
}

// MPISSHSecretKeys are the keys of that Secret: the private key, then the
// public key in authorized_keys form.
var MPISSHSecretKeys = [2]string{mpiSSHPrivateKey, mpiSSHPublicKey}

// NeedsMPISSHSecret reports whether the component's pods mount the SSH key
// Secret: a multinode TRT-LLM component.
func NeedsMPISSHSecret(dcd *v1alpha1.DynamoComponentDeployment) bool {
	if !IsMultinode(dcd) {
		return false
	}
	l, _ := launcherOf(dcd, nil)
	return l != nil && l.framework == v1alpha1.BackendFrameworkTRTLLM
}

// LeaderWorkerSet renders the workload of a multinode component. Errors, as
// for Deployment, are the user's to fix; a backend the operator cannot tell
// or cannot launch across nodes is one of them, since pods without a rank
// would each start an engine of their own.
func LeaderWorkerSet(dcd *v1alpha1.DynamoComponentDeployment, graphPVCs []v1alpha1.GraphPVC, o Options) (*lwsv1.LeaderWorkerSet, error) {
	if !IsMultinode(dcd) {
		return nil, fmt.Errorf("component %s is not multinode", dcd.Name)
	}
	template, err := podTemplate(dcd, graphPVCs, o)
	if err != nil {
		return nil, err
	}
	main := findContainer(template.Spec.Containers, MainContainerName)
	l, err := launcherOf(dcd, main)
	if err != nil {
		return nil, err
	}
	g := group{nodes: nodeCount(dcd), gpus: gpusOf(main), dcd: dcd}
	if l.check != nil {
		if err := l.check(main, g); err != nil {
			return nil, field.ErrorList{err}.ToAggregate()
		}
	}
	leader, worker := groupTemplates(template, l, g)
	replicas := int32(1)
	if r := dcd.Spec.Replicas; r != nil {
		replicas = *r
	}
	return &lwsv1.LeaderWorkerSet{
		TypeMeta: metav1.TypeMeta{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        dcd.Name,
			Namespace:   dcd.Namespace,
			Labels:      workloadLabels(dcd),
			Annotations: workloadAnnotations(dcd),
		},
		Spec: leaderWorkerSetSpec(replicas, g.nodes, leader, worker),
	}, nil
}

// groupTemplates are a group's leader and worker pod templates: the
// component's template, with each role's label and the launcher's flags.
func groupTemplates(template corev1.PodTemplateSpec, l *launcher, g group) (leader, worker corev1.PodTemplateSpec) {
	leader, worker = *template.DeepCopy(), *template.DeepCopy()
	leader.Labels[LabelMultinodeRole], worker.Labels[LabelMultinodeRole] = RoleLeader, RoleWorker
	l.leader(&leader.Spec, findContainer(leader.Spec.Containers, MainContainerName), g)
	wmain := findContainer(worker.Spec.Containers, MainContainerName)
	// A worker serves nothing of its own: the leader's engine drives it, and
	// the runtime's probes on the system port would never answer.
	wmain.StartupProbe, wmain.LivenessProbe, wmain.ReadinessProbe = nil, nil, nil
	l.worker(&worker.Spec, wmain, g)
	spreadGroup(&leader.Spec, g.dcd)
	spreadGroup(&worker.Spec, g.dcd)
	return leader, worker
}

// leaderWorkerSetSpec runs replicas groups of nodes pods each.
func leaderWorkerSetSpec(replicas, nodes int32, leader, worker corev1.PodTemplateSpec) lwsv1.LeaderWorkerSetSpec {
	return lwsv1.LeaderWorkerSetSpec{
		Replicas: ptr.To(replicas),
		// Every pod of a group starts at once; the launchers wait for
		// each other (DNS, the leader's port), so no pod idles on GPUs
		// waiting for its leader to be Ready first.
		StartupPolicy: lwsv1.LeaderCreatedStartupPolicy,
		// A headless Service per group, <component>-<group>, which the
		// pods' DNS names (LWS_LEADER_ADDRESS) live under. With the
		// default (Shared) LeaderWorkerSet names its one headless
		// Service after itself, <component>: the component's own
		// Service, which the controller that makes first takes, so
		// either the operator's apply fails on a Service another
		// controller owns or the pods' subdomain is a ClusterIP
		// Service, under which no pod has a DNS name.
		NetworkConfig: &lwsv1.NetworkConfig{SubdomainPolicy: ptr.To(lwsv1.SubdomainUniquePerReplica)},
		// As for Deployments (rolloutStrategy): a group is replaced only
		// by a new one that is ready, one group at a time.
		RolloutStrategy: lwsv1.RolloutStrategy{
			Type: lwsv1.RollingUpdateStrategyType,
			RollingUpdateConfiguration: &lwsv1.RollingUpdateConfiguration{
				MaxUnavailable: intstr.FromInt32(0),
				MaxSurge:       intstr.FromInt32(GroupSurge),
			},
		},
		LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
			Size:           ptr.To(nodes),
			LeaderTemplate: &leader,
			WorkerTemplate: worker,
			// An engine cannot lose a rank and live: a pod that fails
			// restarts its whole group.
			RestartPolicy: lwsv1.RecreateGroupOnPodRestart,
		},
	}
}

// GroupSurge is how many groups a rollout adds above the replicas
// (LeaderWorkerSet's maxSurge): the new revision's first group gets the
// next group index, replicas, while every old group still serves.
const GroupSurge = 1

// spreadGroup puts a group's pods on nodeCount distinct nodes, as the
// service asks (a group spans nodeCount nodes): each pod repels the pods of
// its own group per node. The group is told by LeaderWorkerSet's group-key
// label, which the API server adds to the selector at each pod's creation
// (matchLabelKeys), so the groups of a component do not repel each other.
// Scoring alone (the scheduler's default spreading) did not do it once
// the groups were gang-scheduled: a group's pods are then placed in one
// cycle, and the simulator put two on one node.
func spreadGroup(spec *corev1.PodSpec, dcd *v1alpha1.DynamoComponentDeployment) {
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.PodAntiAffinity == nil {
		spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	anti := spec.Affinity.PodAntiAffinity
	anti.RequiredDuringSchedulingIgnoredDuringExecution = append(anti.RequiredDuringSchedulingIgnoredDuringExecution,
		corev1.PodAffinityTerm{
			LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{LabelComponent: dcd.Name}},
			MatchLabelKeys: []string{lwsv1.GroupUniqueHashLabelKey},
			TopologyKey:    corev1.LabelHostname,
		})
}

// MultinodeSelector selects the leaders of a multinode component: the pods
// that serve, and what an autoscaler counts (one per group).
func MultinodeSelector(dcd *v1alpha1.DynamoComponentDeployment) map[string]string {
	return merged(selector(dcd), map[string]string{LabelMultinodeRole: RoleLeader})
}

// servingSelector selects the pods that serve: all of a component's, or
// the leaders of a multinode one.
func servingSelector(dcd *v1alpha1.DynamoComponentDeployment) map[string]string {
	if IsMultinode(dcd) {
		return MultinodeSelector(dcd)
	}
	return selector(dcd)
}

// group is what a launcher knows about one group of a component.
type group struct {
	nodes int32
	// gpus is the GPU count of one pod (one node's share).
	gpus int64
	dcd  *v1alpha1.DynamoComponentDeployment
}

// A launcher adds what one backend's engine needs to span the nodes of a
// group. Adding a backend adds a row to launchers.
type launcher struct {
	framework v1alpha1.BackendFramework
	// module is the Python module of Dynamo's worker for the backend,
	// found in a command line when backendFramework is not set.
	module string
	// check refuses a spec the backend cannot spread over nodes.
	check  func(main *corev1.Container, g group) *field.Error
	leader func(pod *corev1.PodSpec, main *corev1.Container, g group)
	worker func(pod *corev1.PodSpec, main *corev1.Container, g group)
}

var launchers = []launcher{
	{framework: v1alpha1.BackendFrameworkVLLM, module: "dynamo.vllm", check: vllmCheck, leader: vllmLeader, worker: vllmWorker},
	{framework: v1alpha1.BackendFrameworkSGLang, module: "dynamo.sglang", leader: sglangLeader, worker: sglangWorker},
	{framework: v1alpha1.BackendFrameworkTRTLLM, module: "dynamo.trtllm", leader: trtllmLeader, worker: trtllmWorker},
}

// launcherOf finds the component's backend: backendFramework when set, else
// the Dynamo worker module its main container runs.
func launcherOf(dcd *v1alpha1.DynamoComponentDeployment, main *corev1.Container) (*launcher, error) {
	path := field.NewPath("spec", "backendFramework")
	if fw := dcd.Spec.BackendFramework; fw != "" {
		for i := range launchers {
			if launchers[i].framework == fw {
				return &launchers[i], nil
			}
		}
		return nil, field.ErrorList{field.NotSupported(path, fw, frameworks())}.ToAggregate()
	}
	if main == nil && dcd.Spec.ExtraPodSpec != nil {
		main = dcd.Spec.ExtraPodSpec.MainContainer
	}
	if main != nil {
		words := commandLine(main)
		for i := range launchers {
			if slices.Contains(words, launchers[i].module) {
				return &launchers[i], nil
			}
		}
	}
	return nil, field.ErrorList{field.Required(path, fmt.Sprintf(
		"a multinode service needs its backend to give each node its rank: set backendFramework (%s) "+
			"or run Dynamo's worker module (python3 -m dynamo.<backend>)", strings.Join(frameworks(), ", ")))}.ToAggregate()
}

func frameworks() []string {
	out := make([]string, 0, len(launchers))
	for _, l := range launchers {
		out = append(out, string(l.framework))
	}
	return out
}

// commandLine is the container's command and args split into words
// (args are often one shell string).
func commandLine(c *corev1.Container) []string {
	var words []string
	for _, s := range append(slices.Clone(c.Command), c.Args...) {
		words = append(words, strings.Fields(s)...)
	}
	return words
}

// gpusOf is the GPU count one pod asks for.
func gpusOf(c *corev1.Container) int64 {
	if c == nil {
		return 0
	}
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name, q := range list {
			if strings.Contains(string(name), "gpu") {
				return q.Value()
			}
		}
	}
	return 0
}

// flagValue is the integer value of a flag (--flag N or --flag=N), def when
// absent or not a number.
func flagValue(words []string, flag string, def int64) int64 {
	for i, w := range words {
		v, ok := "", false
		switch {
		case w == flag && i+1 < len(words):
			v, ok = words[i+1], true
		case strings.HasPrefix(w, flag+"="):
			v, ok = strings.TrimPrefix(w, flag+"="), true
		}
		if ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return def
}

func hasFlag(words []string, flag string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return w == flag || strings.HasPrefix(w, flag+"=") })
}

// addFlags adds flags (name, then value unless empty) the user did not
// give: their own are kept. A shell script (sh -c) gets them at its end;
// otherwise they are appended to args.
func addFlags(c *corev1.Container, flags ...[2]string) {
	words := commandLine(c)
	var add []string
	for _, f := range flags {
		if hasFlag(words, f[0]) {
			continue
		}
		add = append(add, f[0])
		if f[1] != "" {
			add = append(add, f[1])
		}
	}
	if len(add) == 0 {
		return
	}
	if script := shellScript(c); script != nil {
		*script += " " + strings.Join(add, " ")
		return
	}
	c.Args = append(c.Args, add...)
}

// shellScript points at the script of a container that runs `sh -c
// SCRIPT` (or bash), nil otherwise.
func shellScript(c *corev1.Container) *string {
	line := append(slices.Clone(c.Command), c.Args...)
	if len(line) < 3 || !isShell(line[0]) || line[1] != "-c" {
		return nil
	}
	// The script is the word after -c; point into whichever slice holds it.
	if len(c.Command) >= 3 {
		return &c.Command[2]
	}
	return &c.Args[2-len(c.Command)]
}

func isShell(s string) bool {
	base := s[strings.LastIndex(s, "/")+1:]
	return base == "sh" || base == "bash"
}

// asShell turns the container's command line into `sh -c 'exec ...'`, for
// a launch that needs the shell (arithmetic, a preamble); the engine stays
// the container's main process.
func asShell(c *corev1.Container) *string {
	if s := shellScript(c); s != nil {
		return s
	}
	quoted := make([]string, 0, len(c.Command)+len(c.Args))
	for _, w := range append(slices.Clone(c.Command), c.Args...) {
		quoted = append(quoted, shellQuote(w))
	}
	c.Command, c.Args = []string{"/bin/sh", "-c"}, []string{"exec " + strings.Join(quoted, " ")}
	return &c.Args[0]
}

// shellQuote quotes a word for sh, leaving $(VAR) references the kubelet
// substitutes before the shell runs and plain words alone.
func shellQuote(w string) string {
	if w != "" && strings.IndexFunc(w, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == '=' || r == ',' ||
			r == '$' || r == '(' || r == ')' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// vLLM (https://docs.vllm.ai/en/latest/serving/parallelism_scaling.html):
// an engine wider than one node's GPUs (tensor × pipeline parallel) runs
// with the multiprocessing executor over nodes, the leader as rank 0 and
// the workers headless; an engine that fits one node but asks for more data
// parallel ranks than one node holds runs as data parallel with hybrid load
// balancing, each node serving its local ranks.

const (
	vllmTP = "--tensor-parallel-size"
	vllmPP = "--pipeline-parallel-size"
	vllmDP = "--data-parallel-size"
)

func vllmShape(main *corev1.Container) (world, dp int64) {
	w := commandLine(main)
	return flagValue(w, vllmTP, 1) * flagValue(w, vllmPP, 1), flagValue(w, vllmDP, 1)
}

func vllmCheck(main *corev1.Container, g group) *field.Error {
	world, dp := vllmShape(main)
	if g.gpus > 0 && world*dp > g.gpus {
		return nil
	}
	return field.Invalid(field.NewPath("spec", "multinode", "nodeCount"), g.nodes, fmt.Sprintf(
		"vLLM spans nodes only when %s × %s (× %s) exceeds the GPUs of one pod (%d); the args ask for %d",
		vllmTP, vllmPP, vllmDP, g.gpus, world*dp))
}

func vllmDistributed(main *corev1.Container, g group) bool {
	world, _ := vllmShape(main)
	return world > g.gpus
}

func vllmLeader(_ *corev1.PodSpec, main *corev1.Container, g group) {
	if vllmDistributed(main, g) {
		addFlags(main, vllmMP(g, "0")...)
		return
	}
	addFlags(main, vllmDataParallel(main, g, "0")...)
}

func vllmWorker(_ *corev1.PodSpec, main *corev1.Container, g group) {
	if vllmDistributed(main, g) {
		// A headless worker that finds no master exits, and its group
		// restarts whole: it waits (bounded) for the leader's master port,
		// which the leader opens as its engine starts.
		// The user's --master-port, if given, is the one to wait for.
		port := strconv.FormatInt(flagValue(commandLine(main), "--master-port", 29500), 10)
		script := asShell(main)
		*script = `i=0; until python3 -c "import socket; socket.create_connection(('$LWS_LEADER_ADDRESS', ` + port +
			`), 2)" 2>/dev/null; do i=$((i+1)); [ "$i" -ge 900 ] && { echo "no master at $LWS_LEADER_ADDRESS:` + port +
			`" >&2; exit 1; }; sleep 2; done; ` + *script
		addFlags(main, append(vllmMP(g, lwsWorkerIndex), [2]string{"--headless", ""})...)
		return
	}
	world, _ := vllmShape(main)
	local := g.gpus / world
	// The first data parallel rank of a node is local × its index: the
	// shell computes it once the kubelet has put the index in.
	asShell(main)
	addFlags(main, vllmDataParallel(main, g, fmt.Sprintf("$((%d*%s))", local, lwsWorkerIndex))...)
}

func vllmMP(g group, rank string) [][2]string {
	return [][2]string{
		{"--distributed-executor-backend", "mp"},
		{"--nnodes", strconv.Itoa(int(g.nodes))},
		{"--node-rank", rank},
		{"--master-addr", lwsLeaderAddress},
		{"--master-port", vllmMasterPort},
	}
}

func vllmDataParallel(main *corev1.Container, g group, startRank string) [][2]string {
	world, _ := vllmShape(main)
	local := g.gpus / world
	return [][2]string{
		{"--data-parallel-hybrid-lb", ""},
		{vllmDP, strconv.FormatInt(local*int64(g.nodes), 10)},
		{"--data-parallel-size-local", strconv.FormatInt(local, 10)},
		{"--data-parallel-start-rank", startRank},
		{"--data-parallel-address", lwsLeaderAddress},
		{"--data-parallel-rpc-port", vllmDataParallelRPC},
	}
}

// SGLang (https://docs.sglang.ai/references/multi_node.html): every node
// runs the same server with the leader's address, the node count and its
// rank.

func sglangFlags(g group, rank string) [][2]string {
	return [][2]string{
		{"--dist-init-addr", lwsLeaderAddress + ":" + sglangDistInitPort},
		{"--nnodes", strconv.Itoa(int(g.nodes))},
		{"--node-rank", rank},
	}
}

func sglangLeader(_ *corev1.PodSpec, main *corev1.Container, g group) {
	addFlags(main, sglangFlags(g, "0")...)
}

func sglangWorker(_ *corev1.PodSpec, main *corev1.Container, g group) {
	addFlags(main, sglangFlags(g, lwsWorkerIndex)...)
}

// TRT-LLM (Dynamo's multinode guide): the leader starts every rank with
// mpirun over SSH (trtllm-llmapi-launch around the worker's command), the
// workers only run sshd. Both mount the component's generated key pair.

// mpiSSHSetup installs the key pair for the shell's user; $HOME rather than
// ~ because images set HOME apart from the passwd entry.
const mpiSSHSetup = `mkdir -p "$HOME/.ssh" && ` +
	`cp ` + mpiSSHMountPath + `/` + mpiSSHPrivateKey + ` "$HOME/.ssh/id_rsa" && ` +
	`cp ` + mpiSSHMountPath + `/` + mpiSSHPublicKey + ` "$HOME/.ssh/authorized_keys" && ` +
	`chmod 600 "$HOME/.ssh/id_rsa" "$HOME/.ssh/authorized_keys"`

func trtllmMounts(pod *corev1.PodSpec, main *corev1.Container, g group) {
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: mpiSSHVolumeName, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: MPISSHSecretName(g.dcd), DefaultMode: ptr.To[int32](0o440)},
	}})
	main.VolumeMounts = append(main.VolumeMounts, corev1.VolumeMount{Name: mpiSSHVolumeName, MountPath: mpiSSHMountPath, ReadOnly: true})
	main.Env = append(main.Env, corev1.EnvVar{Name: "OMPI_MCA_orte_keep_fqdn_hostnames", Value: "1"})
}

func trtllmLeader(pod *corev1.PodSpec, main *corev1.Container, g group) {
	trtllmMounts(pod, main, g)
	// Workers' names: the leader's with the worker index after its pod
	// name (LeaderWorkerSet names worker pods <leader pod>-<index> under
	// the same subdomain).
	hosts := []string{`"$LWS_LEADER_ADDRESS"`}
	for i := int32(1); i < g.nodes; i++ {
		hosts = append(hosts, fmt.Sprintf(`"${LWS_LEADER_ADDRESS%%%%.*}-%d.${LWS_LEADER_ADDRESS#*.}"`, i))
	}
	script := asShell(main) // [exec] <the user's command line>
	engine := strings.TrimPrefix(*script, "exec ")
	*script = mpiSSHSetup + " && " +
		fmt.Sprintf(`printf 'Host *\n  Port %d\n  StrictHostKeyChecking no\n  IdentityFile %%s/.ssh/id_rsa\n' "$HOME" > "$HOME/.ssh/config"`, mpiSSHPort) + " && " +
		// Workers' DNS records appear as their pods start: wait, bounded.
		`for h in ` + strings.Join(hosts[1:], " ") + `; do i=0; until getent hosts "$h" >/dev/null; do ` +
		`i=$((i+1)); [ "$i" -ge 300 ] && { echo "no DNS record for $h" >&2; exit 1; }; sleep 1; done; done && ` +
		fmt.Sprintf(`exec mpirun --allow-run-as-root --oversubscribe -n %d -H %s --mca pml ob1 `+
			`--mca plm_rsh_args "-p %d -o StrictHostKeyChecking=no -i $HOME/.ssh/id_rsa" %s `+
			`bash -c %s`,
			int64(g.nodes)*max(g.gpus, 1), strings.Join(hosts, ","), mpiSSHPort, mpiEnvFlags(main),
			shellQuote("trtllm-llmapi-launch "+engine))
}

// mpiEnvFlags forwards the container's environment to the ranks mpirun
// starts on the workers (ssh does not carry it).
func mpiEnvFlags(main *corev1.Container) string {
	names := []string{}
	for _, e := range main.Env {
		names = append(names, "-x "+e.Name)
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), " ")
}

func trtllmWorker(pod *corev1.PodSpec, main *corev1.Container, g group) {
	trtllmMounts(pod, main, g)
	main.Command = []string{"/bin/sh", "-c"}
	main.Args = []string{mpiSSHSetup + " && " +
		`mkdir -p "$HOME/.ssh/host" && ssh-keygen -q -t ed25519 -N '' -f "$HOME/.ssh/host/key" && ` +
		fmt.Sprintf(`printf 'Port %d\nHostKey %%s/.ssh/host/key\nPidFile %%s/.ssh/sshd.pid\nStrictModes no\n`+
			`PermitRootLogin yes\nPasswordAuthentication no\nAuthorizedKeysFile %%s/.ssh/authorized_keys\n' `+
			`"$HOME" "$HOME" "$HOME" > "$HOME/.ssh/sshd_config" && `, mpiSSHPort) +
		`exec /usr/sbin/sshd -D -e -f "$HOME/.ssh/sshd_config"`}
	// Ready once sshd accepts connections: the leader's mpirun can reach it.
	main.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(mpiSSHPort)}},
		PeriodSeconds: 10, FailureThreshold: 3,
	}
	main.Ports = append(main.Ports, corev1.ContainerPort{Name: "ssh", ContainerPort: mpiSSHPort, Protocol: corev1.ProtocolTCP})
}
