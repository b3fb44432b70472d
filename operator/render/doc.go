// Package render turns the operator's API objects into the Kubernetes
// objects it applies. Every function is pure: no client, no I/O, and the same
// input always renders byte-identical JSON, so the applier can tell from a
// hash whether anything changed.
//
// # The runtime's pod contract
//
// A component's pod is its service spec laid over the pod contract of
// Dynamo's runtime for its componentType (contract.go, one table): the env
// its processes read, its ports, and default startup, liveness and readiness
// probes, so that a pod is Ready only when the runtime says it can serve.
// The values are those Dynamo's own operator renders; TestMigrationChildren
// compares our rendering with what it rendered for six compat graphs
// (../shared/migration/children.yaml) field by field.
//
//	type                    ports                 probes (startup / liveness / readiness)
//	frontend                http 8000, system     - / /live on http / /health on http
//	worker, prefill, decode system, nixl 19090    /live 10s×720 (2 h) / /live 5s×1 / /health on system
//	planner                 system, metrics 9085  as workers
//	anything else           system                none (nothing says what it serves)
//
// A user's probe (the service's livenessProbe/readinessProbe, then
// extraPodSpec.mainContainer's) with a handler replaces the default; one
// without a handler, such as only `startupProbe.initialDelaySeconds: 180` as
// Dynamo's examples write, is laid over the default; one without a handler
// where there is no default is refused naming the field. Every pod gets a 60 s
// grace period, fsGroup 1000 and, with Kubernetes discovery (the default;
// annotation nvidia.com/dynamo-discovery-backend: etcd turns it off), the
// graph's ServiceAccount <graph>-k8s-service-discovery, whose Role lets it
// read pods, endpoints and EndpointSlices and write DynamoWorkerMetadata.
//
// # Differences from Dynamo's rendering we keep on purpose
//
// TestMigrationChildren fails on any difference not in this list (its
// knownDifferences table says the same, per field path):
//
//	field                          Dynamo's                       ours                          why
//	Deployment/DCD names           <graph>-<svc>-<worker hash>    <graph>-<svc>                 names stay stable across rollouts; the hash is in a label and the env
//	selector                       nvidia.com/selector=<name>     nvidia.com/dynamo-component   a Deployment's selector is immutable; ours predates this work
//	label dynamo-component         service name                   component name                it is our selector label
//	worker hash value              its digest                     ours (8 hex)                  same role (workers pair only with workers of the same spec), other input encoding
//	rollingUpdate                  25% / 25%                      maxUnavailable 0; maxSurge 1 for GPU pods, 25% others
//	                                                                                            never fewer serving workers than desired; one spare instance of GPUs at a time
//	requests[nvidia.com/gpu]       unset (the API server copies)  = the limit                   the same pods
//	DYN_SYSTEM_ENABLED/PORT        workers only                   every component               the Service exposes 9090 on all (SPEC 2)
//	system port on frontends       none                           9090                          as above
//	planner ServiceAccount         planner-serviceaccount         the graph's discovery account upstream's chart creates that account; ours grants no scaling rights yet
//	base-model hash label          on Deployment, pods, Service dynamo-model-<hash>
//	                                                              on pods and Service <component>-model
//	Deployment label dynamo-namespace
//	                               on Deployment and pods         on pods only                  PodMonitors and discovery select pods
//
// Frontends get `python3 -m dynamo.frontend` when the user gives neither
// command nor args, as upstream. An epp component with eppConfig runs
// Dynamo's configured endpoint picker (epp.go); one without renders as a
// generic component.
//
// # Engine features and the endpoint picker
//
// gpuMemoryService and failover (engine.go) and eppConfig (epp.go) render as
// Dynamo's operator renders them, with these differences:
//
//	what                           Dynamo's                                ours                                  why
//	gms-weights script             its wrapper text                        ours, same processes and exit        the script is ours; the processes and sockets are the contract
//	DeviceClass                    checked to exist before rendering       not checked; pods Pending name it     reading DeviceClasses is a cluster-wide right a namespace-scoped install lacks
//	claim template spec change     per its sync                            deleted and created anew              a template is immutable; claims already made keep theirs
//	failover without gpuMemoryService, other backends, multinode
//	                               refused by its webhook                  not rendered, named in FieldsNotActedOn  an accepted graph keeps running as before
//	EPP ServiceAccount             a global epp-serviceaccount             the graph's discovery account         no account per cluster from the operator's chart
//	EPP Service                    <graph>-epp, selects type epp           the component's Service (<graph>-<svc>), grpc, grpc-health and system 9090
//	                                                                                                             one Service per component; the same name for a service named Epp
//	EPP config text                its typed EndpointPickerConfig, marshalled
//	                                                                       the user's object, keys sorted        the same configuration; no field dropped
//	InferencePool <graph>-pool     created by its graph controller;        created where the API is served,     a graph runs on a cluster without the inference extension
//	                               a cluster without its API fails the     else the graph's InferencePool
//	                               graph's reconcile                       condition says so; deleted when the
//	                                                                       picker goes
//	picker's pod template          no sign of its configuration            a digest of an inline configuration  the picker reads its file once: a new one rolls its pods
//	                                                                       (nvidia.com/epp-config-hash)
//
// # Multinode
//
// A service with multinode.nodeCount >= 2 is a LeaderWorkerSet (multinode.go):
// size nodeCount, replicas the service's replicas, a leader and a worker
// template, the launch flags of its backend (backendFramework, else the
// dynamo.<backend> module its command runs) added only where the user's
// command line lacks them. Differences from Dynamo's LeaderWorkerSet
// rendering (children.yaml has none to compare field by field):
//
//	what                      Dynamo's                                 ours                                   why
//	vLLM over nodes           mp or Ray (annotation, origin version)   mp only                                vLLM's documented multi-node launch; no Ray in Dynamo's images by default
//	vLLM worker start         init container waits (script ConfigMap)   the worker's shell waits (python3 socket)  no ConfigMap per graph; same wait for the master port
//	flags the user gave       appended again by some paths             kept, ours only where absent           a user's --nnodes or --master-port wins
//	vLLM without TP/DP beyond one pod  renders, injects nothing        refused naming spec.multinode.nodeCount pods without ranks each start an engine
//	unknown backend           renders without flags                    refused naming spec.backendFramework  never a silent wrong render (SPEC 2)
//	TRT-LLM SSH keys          a Secret the platform chart configures   <component>-mpi-ssh, ed25519, generated once by the operator
//	mpirun                    --allow-run-as-root only as uid 0        always (OMPI_ALLOW_RUN_AS_ROOT in the examples)
//	LWS rollout               LWS defaults (maxUnavailable 1)          maxUnavailable 0, maxSurge 1           never fewer serving groups than desired
//	Services                  select every pod                          select leaders (dynamo-multinode-role=leader)  workers serve nothing
//	status / scale            pods                                     groups (2 replicas × 4 nodes = 2)      an HPA scales instances (SPEC 2)
//	groups' headless Service  LWS default (Shared, named after the LWS)  one per group (UniquePerReplica)    ours names the LWS <component>, the component Service's name
//	group placement           another scheduler's PodGroups (Volcano, KAI)  a gang PodGroup per group index, the rollout's surge group's too (k8s 1.36)  all-or-nothing with kube-scheduler itself (podgroup.go)
//	a group's nodes           scheduler's choice                       required anti-affinity within a group  nodeCount distinct nodes; gang placement packs a group otherwise
//
// Upgrading from v0.2.0, which rendered a multinode service as one
// Deployment of replicas × nodeCount pods: the service keeps that
// Deployment and its pods (scaled as v0.2.0 scaled it) until its spec
// changes, with the component's condition WorkloadPending
// (LeaderWorkerSetAtNextSpecChange) and an event saying so; at the next
// change the LeaderWorkerSet is created and the Deployment deleted
// (controllers/multinode.go, previousMultinodeDeployment).
//
// Golden files: TestGolden renders every graph of ../shared/compat and
// compares the objects whole with testdata/<manifest>.golden.yaml; `make
// golden` rewrites them. A change there reaches an existing workload only at
// its service's next spec change: a new version keeps each child as the
// previous renderer wrote it until then (controllers/adoption.go), so an
// upgrade restarts nothing (scenarios/upgrade.feature).
package render
