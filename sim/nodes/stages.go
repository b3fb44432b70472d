package nodes

import "strings"

// podReadyAgain is the simulator's own stage, in the spirit of a kubelet's
// status sync: the node lifecycle controller sets Ready=False on the pods
// of a node whose heartbeats are late, and a kubelet sets it back once it
// reports again. KWOK's default stages never do, so after a node's brief
// NotReady (a restored node, or lease renewals late under load) its pods
// would stay unready for good. Pods whose containers are not ready (the
// crash-loop fault) are left alone.
const podReadyAgain = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values: ['False']
    - key: '.status.conditions.[] | select( .type == "ContainersReady" ) | .status'
      operator: 'In'
      values: ['True']
  delay:
    durationMilliseconds: 1000
  next:
    statusTemplate: |
      conditions:
      - lastTransitionTime: {{ Now | Quote }}
        status: "True"
        type: Ready
`

// AdmittedAnnotation is written on a Dynamo component's pod (label
// nvidia.com/dynamo-component) by the simulator's kubelet checks
// (sim/kubelet Admitter) once its image "pulls" and its volumes and env
// sources exist; until then KWOK's pod-ready stage leaves the pod Pending,
// and the Admitter reports why as the kubelet would (ErrImagePull,
// CreateContainerConfigError, ContainerCreating). Other pods (the
// operator's, benchmarks') start as before.
const AdmittedAnnotation = "sim.dynamo.dev/admitted"

// dynamoComponentLabel is sim/workers.ComponentLabel (nodes does not import
// workers).
const dynamoComponentLabel = "nvidia.com/dynamo-component"

// probedPodReady is KWOK's default pod-ready stage with readiness left to
// the simulator's prober (sim/probes): a container with a readiness or
// startup probe starts not ready (and not started while its startup probe
// has not passed), and so does the pod. KWOK probes nothing, so without
// this every pod would be Ready the moment it is scheduled. Pods without
// probes become Ready as before.
const probedPodReady = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: NAME
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
GATE
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $ready := "True" }}
      {{ range .spec.containers }}{{ if or .readinessProbe .startupProbe }}{{ $ready = "False" }}{{ end }}{{ end }}

      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: {{ $ready | Quote }}
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: {{ $ready | Quote }}
        type: ContainersReady
      {{ range .spec.readinessGates }}
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: {{ .conditionType | Quote }}
      {{ end }}

      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: {{ if or .readinessProbe .startupProbe }}false{{ else }}true{{ end }}
        started: {{ if .startupProbe }}false{{ else }}true{{ end }}
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}

      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        {{ if eq .restartPolicy "Always" }}
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
        {{ else }}
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
        {{ end }}
      {{ end }}
      {{ $hostIPs := NodeIPsWith .spec.nodeName }}
      {{ with $hostIPs }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

// podReadyStage is probedPodReady named name, with more selector
// requirements (YAML list items at the selector's indentation).
func podReadyStage(name, requirements string) string {
	s := strings.Replace(probedPodReady, "NAME", name, 1)
	return strings.Replace(s, "GATE\n", strings.TrimPrefix(requirements, "\n")+"\n", 1)
}

// AnnotationJobOutcome on a Job's pod says how the simulator ends it:
// absent or "succeed" completes it (exit 0), "fail" fails it (exit 1),
// "hang" keeps it running, until the Job's activeDeadlineSeconds has the
// Job controller stop it, or the annotation changes. Feature steps set it
// on image-build pods (through a DynamoComponent's
// imageBuilderExtraPodMetadata, or on the pod itself).
const AnnotationJobOutcome = "dynamo-sim/job-outcome"

// jobPodComplete is KWOK's fast pod-complete stage (pods of Jobs succeed
// once Running) for pods whose outcome annotation asks neither to fail nor
// to hang.
const jobPodComplete = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values: ['Job']
    - key: '.metadata.annotations["` + AnnotationJobOutcome + `"]'
      operator: 'NotIn'
      values: ['fail', 'hang']
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
`

// jobPodFail fails a Job's pod whose outcome annotation says "fail", as a
// build that exits 1 would.
const jobPodFail = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: job-pod-fail
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values: ['Job']
    - key: '.metadata.annotations["` + AnnotationJobOutcome + `"]'
      operator: 'In'
      values: ['fail']
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 1
            finishedAt: {{ $now | Quote }}
            reason: Error
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
`
