@topology
Feature: A topology-constrained graph's pods are placed within one domain, and wait naming a label no node carries
  A graph's spec.topologyConstraint.packDomain places every pod of the graph within one domain of that level
  (one rack, one block); a service's (a v1beta1 component's) places its own pods, each group's of a multinode
  service, within one. Each level is a node label (the operator's --topology-domain-labels, the chart's
  topology.domainLabels): rack is topology.nvidia.com/rack, host kubernetes.io/hostname, zone
  topology.kubernetes.io/zone. The placement is Kubernetes' own: required pod affinity on the level's label
  among the pods that must share a domain, and a node affinity requiring the label. While no node carries a
  level's label the graph is pending, and its status names the label.

  The simulator's GPU nodes carry rack, block and NVLink-domain labels, two nodes a rack, and no zone
  label. envtest has no scheduler and no nodes; its Deployment driver holds back pods whose node affinity
  asks for a label no Node carries, as the scheduler would.

  Scenario: A graph placed within one zone waits while no node has the zone label, and its status names it
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: zoned
      spec:
        topologyConstraint:
          topologyProfile: cluster
          packDomain: zone
        services:
          Frontend:
            componentType: frontend
            replicas: 1
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
      """
    Then it is accepted
    And the dcd "zoned-frontend" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "TopologyLabelMissing"
    And the dgd "zoned" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "no node has the label topology.kubernetes.io/zone (the graph's packDomain zone)"
    And the dgd "zoned" eventually has ".status.state" equal to "pending"
    And the dgd "zoned" has ".status.conditions[?(@.type=="FieldsNotActedOn")].status" equal to ""

  @envtest-only
  Scenario: Once a node carries the label, the graph's pods are placed and it becomes Ready
    Given I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: zoned
      spec:
        topologyConstraint:
          topologyProfile: cluster
          packDomain: zone
        services:
          Frontend:
            componentType: frontend
            replicas: 1
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
      """
    And the dgd "zoned" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "no node has the label topology.kubernetes.io/zone"
    When a node labelled "topology.kubernetes.io/zone=zone-a" joins the cluster
    Then the dgd "zoned" eventually has ".status.state" equal to "successful"

  Scenario: The graph's level and a service's own become required pod affinity on their labels
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: placed
      spec:
        topologyConstraint:
          topologyProfile: cluster
          packDomain: rack
        services:
          Frontend:
            componentType: frontend
            replicas: 1
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          Decode:
            componentType: worker
            subComponentType: decode
            replicas: 2
            topologyConstraint:
              packDomain: host
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--disaggregation-mode", "decode"]
      """
    Then it is accepted
    And the Deployment "placed-frontend" eventually exists
    And the Deployment "placed-frontend" has ".spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey" equal to "topology.nvidia.com/rack"
    And the Deployment "placed-frontend" has ".spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchLabels.nvidia\.com/dynamo-graph-deployment-name" equal to "placed"
    And the Deployment "placed-frontend" has ".spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key" equal to "topology.nvidia.com/rack"
    And the Deployment "placed-decode" eventually exists
    And the Deployment "placed-decode" has ".spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey" equal to "kubernetes.io/hostname"
    And the Deployment "placed-decode" has ".spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].labelSelector.matchLabels.nvidia\.com/dynamo-component" equal to "placed-decode"

  Scenario: A v1beta1 graph's topologyConstraint is placed as the v1alpha1 one, and reads back as written
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: placed-beta
      spec:
        topologyConstraint:
          clusterTopologyName: cluster
          packDomain: rack
        components:
        - name: Frontend
          type: frontend
          replicas: 1
          topologyConstraint:
            packDomain: host
          podTemplate:
            spec:
              containers:
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1
      """
    Then it is accepted
    And it reads back unchanged
    And the Deployment "placed-beta-frontend" eventually exists
    And the Deployment "placed-beta-frontend" has ".spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey" equal to "topology.nvidia.com/rack"
    And the Deployment "placed-beta-frontend" has ".spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[1].topologyKey" equal to "kubernetes.io/hostname"

  Scenario: As in Dynamo, a service's constraint needs the graph's, and a graph's without a level needs every service's
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: unplaced
      spec:
        services:
          Frontend:
            componentType: frontend
            topologyConstraint:
              packDomain: rack
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
      """
    Then it is rejected with a message containing "spec.topologyConstraint: Required value: a service's topologyConstraint (Frontend) needs the graph's, with its topologyProfile"
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: unplaced
      spec:
        topologyConstraint:
          clusterTopologyName: cluster
        components:
        - name: Frontend
          type: frontend
          podTemplate:
            spec:
              containers:
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1
      """
    Then it is rejected with a message containing "spec.topologyConstraint sets no packDomain: set one there, or a topologyConstraint on every service"

  @sim-only
  Scenario: A disaggregated graph placed within one rack lands every pod in one rack
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: racked
      spec:
        backendFramework: vllm
        topologyConstraint:
          topologyProfile: cluster
          packDomain: rack
        services:
          Frontend:
            componentType: frontend
            replicas: 2
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          VllmDecodeWorker:
            componentType: worker
            subComponentType: decode
            replicas: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--disaggregation-mode", "decode"]
          VllmPrefillWorker:
            componentType: worker
            subComponentType: prefill
            replicas: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--disaggregation-mode", "prefill"]
      """
    Then the dgd "racked" becomes Ready, and the time it took is reported
    And every pod of the dgd "racked" runs on nodes with one value of the label "topology.nvidia.com/rack", and where they run is reported

  @sim-only @lws
  Scenario: A multinode service placed within one rack keeps each group's pods in one rack
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: mn-racked
      spec:
        backendFramework: vllm
        topologyConstraint:
          topologyProfile: cluster
        services:
          Worker:
            componentType: worker
            replicas: 2
            multinode:
              nodeCount: 2
            topologyConstraint:
              packDomain: rack
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: vllm-runtime:1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]
      """
    Then the dgd "mn-racked" becomes Ready, and the time it took is reported
    And the pods of each group of the dcd "mn-racked-worker" run on nodes with one value of the label "topology.nvidia.com/rack", and where they run is reported
