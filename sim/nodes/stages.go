package nodes

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
