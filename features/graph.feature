@graph
Feature: A DynamoGraphDeployment runs as one component per service, and its status tells the truth
  The operator turns each service of a graph into a DynamoComponentDeployment, and each component into a
  Deployment and a Service. The graph is Ready only when every component runs its current spec.

  Background:
    Given I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
        labels:
          team: inference
      spec:
        backendFramework: vllm
        envs:
        - name: LOG_FORMAT
          value: json
        services:
          Frontend:
            componentType: frontend
            replicas: 1
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
          VllmWorker:
            componentType: worker
            replicas: 2
            resources:
              limits:
                gpu: "1"
            envs:
            - name: LOG_FORMAT
              value: text
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B"]
      """
    Then it is accepted

  Scenario: A graph becomes Ready with one component, Deployment and Service per service
    Then the dgd "llm" eventually has ".status.state" equal to "successful"
    And the dgd "llm" has ".status.conditions[?(@.type=="Ready")].status" equal to "True"
    And the dgd "llm" has ".status.observedGeneration" equal to "1"
    And the dgd "llm" has ".status.services.VllmWorker.readyReplicas" equal to "2"
    And the dgd "llm" has ".status.services.VllmWorker.componentName" equal to "llm-vllmworker"
    And the dcd "llm-frontend" has ".metadata.ownerReferences[0].name" equal to "llm"
    And the dcd "llm-frontend" has ".metadata.labels.nvidia\.com/dynamo-graph-deployment-name" equal to "llm"
    And the dcd "llm-vllmworker" has ".status.conditions[?(@.type=="Available")].status" equal to "True"
    And the Deployment "llm-vllmworker" has ".spec.replicas" equal to "2"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.containers[?(@.name=="main")].resources.limits.nvidia\.com/gpu" equal to "1"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.containers[?(@.name=="main")].env[?(@.name=="LOG_FORMAT")].value" equal to "text"
    And the Deployment "llm-frontend" has ".spec.template.spec.containers[?(@.name=="main")].env[?(@.name=="LOG_FORMAT")].value" equal to "json"
    And the Service "llm-frontend" has ".spec.ports[*].port" equal to "8000 9090"
    And the Service "llm-vllmworker" has ".spec.ports[*].port" equal to "9090"

  Scenario: Pods carry the runtime's contract: probes, identity, discovery account, a rollout that keeps capacity
    Then the Deployment "llm-vllmworker" eventually has ".spec.template.spec.containers[?(@.name=="main")].startupProbe.httpGet.path" equal to "/live"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.containers[?(@.name=="main")].readinessProbe.httpGet.path" equal to "/health"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.containers[?(@.name=="main")].readinessProbe.httpGet.port" equal to "system"
    And the Deployment "llm-frontend" has ".spec.template.spec.containers[?(@.name=="main")].readinessProbe.httpGet.port" equal to "http"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.containers[?(@.name=="main")].ports[*].containerPort" equal to "9090 19090"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.containers[?(@.name=="main")].env[?(@.name=="POD_NAME")].valueFrom.fieldRef.fieldPath" equal to "metadata.name"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.containers[?(@.name=="main")].env[?(@.name=="DYN_DISCOVERY_BACKEND")].value" equal to "kubernetes"
    And the Deployment "llm-frontend" has ".spec.template.spec.containers[?(@.name=="main")].env[?(@.name=="DYN_NAMESPACE_PREFIX")].value" containing "-llm"
    And the Deployment "llm-vllmworker" has ".spec.strategy.rollingUpdate.maxUnavailable" equal to "0"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.terminationGracePeriodSeconds" equal to "60"
    And the Deployment "llm-vllmworker" has ".spec.template.spec.serviceAccountName" equal to "llm-k8s-service-discovery"
    And the ServiceAccount "llm-k8s-service-discovery" eventually exists
    And the RoleBinding "llm-k8s-service-discovery-binding" eventually has ".roleRef.name" equal to "llm-k8s-service-discovery-role"
    And the Role "llm-k8s-service-discovery-role" has ".metadata.ownerReferences[0].name" equal to "llm"

  Scenario: Scaling a service scales its Deployment and the graph stays honest
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            replicas: 3
      """
    Then the Deployment "llm-vllmworker" eventually has ".spec.replicas" equal to "3"
    And the dgd "llm" eventually has ".status.services.VllmWorker.availableReplicas" equal to "3"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    And the dgd "llm" has ".status.observedGeneration" equal to "2"

  Scenario: A graph written in v1beta1 reads its status as Dynamo writes it, in v1beta1 and in v1alpha1
    The operator stores and writes v1alpha1; a reader of v1beta1 gets status.components keyed by component
    name, each component's status.component, and the columns kubectl shows for v1beta1.
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: agg
      spec:
        backendFramework: vllm
        components:
        - name: Frontend
          type: frontend
          podTemplate:
            spec:
              containers:
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
        - name: VllmDecodeWorker
          type: worker
          replicas: 2
          podTemplate:
            spec:
              containers:
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B"]
                resources:
                  limits:
                    nvidia.com/gpu: "1"
      """
    Then it reads back unchanged
    And the dgd.v1beta1.nvidia.com "agg" eventually has ".status.state" equal to "successful"
    And the dgd.v1beta1.nvidia.com "agg" has ".status.conditions[?(@.type=="Ready")].status" equal to "True"
    And the dgd.v1beta1.nvidia.com "agg" has ".status.observedGeneration" equal to "1"
    And the dgd.v1beta1.nvidia.com "agg" has ".status.components.VllmDecodeWorker.componentKind" equal to "Deployment"
    And the dgd.v1beta1.nvidia.com "agg" has ".status.components.VllmDecodeWorker.componentNames[*]" equal to "agg-vllmdecodeworker"
    And the dgd.v1beta1.nvidia.com "agg" has ".status.components.VllmDecodeWorker.readyReplicas" equal to "2"
    And the dgd.v1beta1.nvidia.com "agg" has ".status.components.Frontend.availableReplicas" equal to "1"
    And the dgd "agg" has ".status.state" equal to "successful"
    And the dgd "agg" has ".status.services.VllmDecodeWorker.componentName" equal to "agg-vllmdecodeworker"
    And the dgd "agg" has ".status.services.VllmDecodeWorker.readyReplicas" equal to "2"
    And the dcd.v1beta1.nvidia.com "agg-vllmdecodeworker" has ".status.component.readyReplicas" equal to "2"
    And the dcd "agg-vllmdecodeworker" has ".status.service.readyReplicas" equal to "2"
    And "kubectl get dgd.v1beta1.nvidia.com" shows the columns "Name, Ready, State, Backend, Age"
    And the Deployment "agg-vllmdecodeworker" has ".spec.template.spec.containers[?(@.name=="main")].resources.limits.nvidia\.com/gpu" equal to "1"

  Scenario: A new service gets its component, and a removed service takes its workload with it
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          Router:
            componentType: default
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
      """
    Then the dcd "llm-router" eventually exists
    And the Deployment "llm-router" eventually exists
    And the dgd "llm" eventually has ".status.services.Router.readyReplicas" equal to "1"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          Router: null
      """
    Then the dcd "llm-router" is eventually gone
    And the Deployment "llm-router" is eventually gone
    And the Service "llm-router" is eventually gone
    And the dgd "llm" eventually has ".status.state" equal to "successful"

  Scenario: Changing an image rolls the Deployment, and the graph is not Ready while old pods still serve
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1
      """
    Then the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].status" equal to "False"
    And the dgd "llm" has ".status.state" equal to "pending"
    And the dgd "llm" has ".status.conditions[?(@.type=="Ready")].reason" equal to "ComponentsNotReady"
    And the Deployment "llm-vllmworker" eventually has ".spec.template.spec.containers[?(@.name=="main")].image" equal to "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].status" equal to "True"
    And the dgd "llm" has ".status.observedGeneration" equal to "2"

  Scenario: Labels of the graph reach its components and their workloads
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    Then the dcd "llm-frontend" has ".metadata.labels.team" equal to "inference"
    When I patch the dgd "llm" with:
      """
      metadata:
        labels:
          team: serving
      """
    Then the dcd "llm-frontend" eventually has ".metadata.labels.team" equal to "serving"
    And the Deployment "llm-frontend" eventually has ".metadata.labels.team" equal to "serving"

  # The operator's cache keeps a Deployment's pod template packed; a hand edit
  # must still be seen against the whole template and undone.
  Scenario: A hand edit of a Deployment's pod template is undone
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the Deployment "llm-frontend" with:
      """
      spec:
        template:
          spec:
            containers:
            - name: main
              image: example.com/edited:by-hand
      """
    Then the Deployment "llm-frontend" eventually has ".spec.template.spec.containers[?(@.name=="main")].image" equal to "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0"
    And the Deployment "llm-frontend" has ".spec.template.spec.containers[?(@.name=="main")].env[?(@.name=="LOG_FORMAT")].value" equal to "json"

  # The operator's writes are counted from the API server's audit log.
  @audit
  Scenario: A reconcile with nothing to change writes nothing
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When the operator restarts
    Then the operator makes no writes in this namespace within 3 seconds

  # envtest-only: the fix names a claim nobody creates; on a real cluster (the simulator) its pods stay
  # Pending, so the graph rightly never becomes Ready again.
  @envtest-only
  Scenario: A spec the user must fix marks the graph failed, naming the problem, until it is fixed
    # Admission accepts a service without an image (users add it later); only
    # rendering the workload finds it missing. Invalid specs the webhook can
    # judge never get this far (webhooks.feature).
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            extraPodSpec:
              mainContainer:
                image: null
      """
    Then the dgd "llm" eventually has ".status.state" equal to "failed"
    And the dgd "llm" has ".status.conditions[?(@.type=="Ready")].message" containing "fix the spec of VllmWorker: spec.extraPodSpec.mainContainer.image"
    And the dgd "llm" has ".status.conditions[?(@.type=="Ready")].message" containing "set the service's image"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
      """
    Then the dgd "llm" eventually has ".status.state" equal to "successful"

  Scenario: Foreground deletion completes, and the claims the operator created survive it
    When I patch the dgd "llm" with:
      """
      spec:
        pvcs:
        - name: model-cache
          create: true
          storageClass: standard
          size: 10Gi
          volumeAccessMode: ReadWriteMany
        services:
          VllmWorker:
            volumeMounts:
            - name: model-cache
              mountPoint: /models
      """
    Then the PersistentVolumeClaim "model-cache" eventually exists
    And the PersistentVolumeClaim "model-cache" has ".metadata.labels.nvidia\.com/dynamo-pvc-retained" equal to "true"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    When I delete the dgd "llm" with foreground propagation
    Then the dgd "llm" is eventually gone
    And the dcd "llm-vllmworker" is eventually gone
    And the Deployment "llm-vllmworker" is eventually gone
    And the PersistentVolumeClaim "model-cache" exists

  Scenario: Background deletion completes too
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I delete the dgd "llm" with background propagation
    Then the dgd "llm" is eventually gone
    And the dcd "llm-frontend" is eventually gone
    And the Deployment "llm-frontend" is eventually gone
    And the Service "llm-frontend" is eventually gone

  Scenario: Fields the operator accepts but does not act on are reported, not silently ignored
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    Then the dgd "llm" has ".status.conditions[?(@.type=="FieldsNotActedOn")].status" equal to ""
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            failover:
              enabled: true
      """
    Then the dgd "llm" eventually has ".status.conditions[?(@.type=="FieldsNotActedOn")].status" equal to "True"
    And the dgd "llm" has ".status.conditions[?(@.type=="FieldsNotActedOn")].message" containing "spec.services.VllmWorker.failover (not rendered: the standby engine shares the active one's GPUs through the GPU memory service: enable gpuMemoryService too)"

  @compat
  Scenario: Every graph users run gets Deployments carrying exactly what they wrote, and becomes Ready
    Then every graph under "../shared/compat" runs with the images, commands, args, GPU limits and env as written

  @compat
  Scenario: Every graph of Dynamo's current documentation, written in v1beta1, runs as written
    Each component's pod template, converted as the operator converts it, reaches its workload: every container
    with its image, command, args, env and resources, the user's values winning. A graph whose pods mount a
    claim its documentation has users create and fill first pends naming that claim where a scheduler runs.
    Then every graph under "../shared/compat-v1beta1" runs with the images, commands, args, GPU limits and env as written
