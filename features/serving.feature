@serving
Feature: Ready means serving, a stuck rollout is explained, scaling holds
  A graph is Ready only when every worker serves; until then kstatus-based tools (Flux, kpt) read it as in
  progress, never as done, its first status written or not. When a rollout cannot progress, the component and the
  graph's Ready message name the service, the pod and the cause Kubernetes reported. A component scaled
  through its scale subresource (kubectl scale dcd, a HorizontalPodAutoscaler) keeps its replicas.

  envtest has no scheduler and no kubelet: the @envtest-only scenarios write the pod states those would
  report through the API. The @sim-only ones need the simulator's kubelets, which run the pods' probes.

  Background:
    Given I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        backendFramework: vllm
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
            extraPodMetadata:
              annotations:
                sim.dynamo.dev/model-load-delay: 10s
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B"]
      """
    Then it is accepted

  @sim-only
  Scenario: A graph is not Ready until every worker's model is loaded
    Then the dgd "llm" becomes Ready no sooner than 10 seconds after it was applied
    And the dgd "llm" has ".status.services.VllmWorker.readyReplicas" equal to "2"
    And kstatus reads the dcd "llm-vllmworker" as Current

  Scenario: kstatus-based tools read a graph as in progress until it serves, a component as its conditions say
    Then kstatus reads the dgd "llm" as InProgress until it is Ready, then as Current
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    And the dcd "llm-vllmworker" has ".status.conditions[?(@.type=="Ready")].status" equal to "True"
    And kstatus reads the dcd "llm-vllmworker" as Current
    And kstatus reads the dgd "llm" as Current

  @envtest-only
  Scenario: A worker no node can hold is named with the scheduler's reason
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When the scheduler cannot place pod "llm-vllmworker-6c9d-x2" of the Deployment "llm-vllmworker": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "Unschedulable"
    And the dcd "llm-vllmworker" has ".status.conditions[?(@.type=="Ready")].reason" equal to "Unschedulable"
    And kstatus reads the dcd "llm-vllmworker" as InProgress
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "VllmWorker (1 of 2 replicas available; pod llm-vllmworker-6c9d-x2 cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.)"
    And the dgd "llm" has ".status.state" equal to "pending"
    When pod "llm-vllmworker-6c9d-x2" is deleted
    Then the dgd "llm" eventually has ".status.state" equal to "successful"
    And kstatus reads the dcd "llm-vllmworker" as Current

  @envtest-only
  Scenario: A claim that does not exist is named
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When the scheduler cannot place pod "llm-vllmworker-6c9d-x2" of the Deployment "llm-vllmworker": "0/4 nodes are available: persistentvolumeclaim \"model-cache\" not found."
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "MissingVolumeClaim"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "pod llm-vllmworker-6c9d-x2 cannot be scheduled: 0/4 nodes are available: persistentvolumeclaim \"model-cache\" not found."

  @envtest-only
  Scenario: A Secret that does not exist is named
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When the kubelet holds pod "llm-frontend-5b7f-q1" of the Deployment "llm-frontend" in CreateContainerConfigError: "secret \"hf-token\" not found"
    Then the dcd "llm-frontend" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "CreateContainerConfigError"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "Frontend (0 of 1 replicas available; pod llm-frontend-5b7f-q1 cannot start container main: secret \"hf-token\" not found)"

  @envtest-only
  Scenario: An image that cannot be pulled is named
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When the kubelet holds pod "llm-vllmworker-6c9d-x2" of the Deployment "llm-vllmworker" in ImagePullBackOff: "Back-off pulling image \"nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9\""
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "ImagePullFailed"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "pod llm-vllmworker-6c9d-x2 cannot pull the image of container main: Back-off pulling image \"nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9\""

  @envtest-only
  Scenario: A crash loop is named with its restart count, and a passed progress deadline marks the component Failed
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When pod "llm-vllmworker-6c9d-x2" of the Deployment "llm-vllmworker" is crash-looping after 7 restarts
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "CrashLoopBackOff"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "pod llm-vllmworker-6c9d-x2 container main is crash-looping (restarted 7 times; last exit code 1, Error)"
    And kstatus reads the dcd "llm-vllmworker" as InProgress
    When the Deployment "llm-vllmworker" exceeds its progress deadline
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Stalled")].status" equal to "True"
    And kstatus reads the dcd "llm-vllmworker" as Failed
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "the rollout made no progress within its progressDeadlineSeconds"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Stalled")].message" containing "VllmWorker: "
    And kstatus reads the dgd "llm" as Failed

  @sim-only
  Scenario: An image rollout never takes a serving worker away before its replacement serves
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            replicas: 4
      """
    Then the dgd "llm" eventually has ".status.services.VllmWorker.availableReplicas" equal to "4"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the dgd "llm" with the following, watching the ready pods of the Deployment "llm-vllmworker" until its rollout is done:
      """
      spec:
        services:
          VllmWorker:
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1
      """
    Then the Deployment "llm-vllmworker" never had fewer than 4 ready pods during the rollout
    And the dgd "llm" eventually has ".status.state" equal to "successful"

  # On the simulator the real scheduler, Deployment controller and the simulated kubelets report the
  # causes; each rollout below keeps the serving pods it started with (maxUnavailable 0).
  @sim-only
  Scenario: On the simulator, a worker no node can hold is named with the scheduler's reason
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            resources:
              limits:
                gpu: "16"
      """
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "Unschedulable"
    And the dcd "llm-vllmworker" has ".status.conditions[?(@.type=="Ready")].reason" equal to "Unschedulable"
    And kstatus reads the dcd "llm-vllmworker" as InProgress
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "cannot be scheduled: 0/"
    And the dgd "llm" has ".status.conditions[?(@.type=="Ready")].message" containing "Insufficient nvidia.com/gpu"
    And the dgd "llm" has ".status.state" equal to "pending"
    And the Deployment "llm-vllmworker" has ".status.readyReplicas" equal to "2"

  @sim-only
  Scenario: On the simulator, a claim that does not exist is named
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            extraPodSpec:
              volumes:
              - name: cache
                persistentVolumeClaim:
                  claimName: model-cache
      """
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "MissingVolumeClaim"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "persistentvolumeclaim \"model-cache\" not found"

  @sim-only
  Scenario: On the simulator, a missing Secret is named, and a passed progress deadline stalls the component and the graph
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          Frontend:
            envFromSecret: hf-token
      """
    Then the dcd "llm-frontend" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "CreateContainerConfigError"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "cannot start container main: secret \"hf-token\" not found"
    And kstatus reads the dgd "llm" as InProgress
    When the Deployment "llm-frontend" is given a progress deadline of 5 seconds
    Then the dcd "llm-frontend" eventually has ".status.conditions[?(@.type=="Stalled")].status" equal to "True"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Stalled")].message" containing "Frontend: "
    And the dgd "llm" has ".status.conditions[?(@.type=="Stalled")].reason" equal to "ComponentStalled"
    And the dgd "llm" has ".status.conditions[?(@.type=="Ready")].message" containing "the rollout made no progress within its progressDeadlineSeconds"
    And kstatus reads the dgd "llm" as Failed
    When I apply the manifest:
      """
      apiVersion: v1
      kind: Secret
      metadata:
        name: hf-token
      stringData:
        HF_TOKEN: hf_0000
      """
    Then the dgd "llm" eventually has ".status.state" equal to "successful"
    And kstatus reads the dgd "llm" as Current
    And kstatus reads the dcd "llm-frontend" as Current

  @sim-only
  Scenario: On the simulator, an image that cannot be pulled is named
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    And pulls of the image "nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9" fail
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9
      """
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "ImagePullFailed"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "cannot pull the image of container main: Back-off pulling image \"nvcr.io/nvidia/ai-dynamo/vllm-runtime:9.9\""
    And the Deployment "llm-vllmworker" has ".status.readyReplicas" equal to "2"

  # @sim-kubelet: the simulator's crash-loop fault writes the status a real kubelet's doubling back-off
  # reaches only after minutes (5 restarts); another cluster leaves it out.
  @sim-only @sim-kubelet
  Scenario: On the simulator, a crash loop is named with its restart count
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When a pod of the Deployment "llm-vllmworker" crash-loops
    Then the dcd "llm-vllmworker" eventually has ".status.conditions[?(@.type=="Available")].reason" equal to "CrashLoopBackOff"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "container main is crash-looping (restarted 5 times; last exit code 1, Error)"
    And kstatus reads the dgd "llm" as InProgress

  Scenario: A worker's rollout deadline covers its model load
    Then the Deployment "llm-vllmworker" eventually has ".spec.progressDeadlineSeconds" equal to "7800"

  # The operator's writes are counted from the API server's audit log.
  @audit
  Scenario: A component scaled through its scale subresource keeps its replicas across graph changes
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I scale the dcd "llm-vllmworker" to 3
    Then the Deployment "llm-vllmworker" eventually has ".spec.replicas" equal to "3"
    And the dcd "llm-vllmworker" keeps 3 replicas while I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            envs:
            - name: LOG_LEVEL
              value: debug
      """
    # The status from before the patch already said 3 available and successful: wait for the status of
    # the patched spec, or the quiet window below could open while the rollout still runs.
    And the dgd "llm" eventually has ".status.observedGeneration" equal to "2"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    And the dgd "llm" has ".status.services.VllmWorker.availableReplicas" equal to "3"
    And the dgd "llm" has ".spec.services.VllmWorker.replicas" equal to "2"
    # Yielding is stable: a fresh reconcile of everything finds nothing to write.
    When the operator restarts
    Then the operator makes no writes in this namespace within 3 seconds
    And the Deployment "llm-vllmworker" has ".spec.replicas" equal to "3"
    # A change of the service's replicas in the graph is a newer decision: it wins.
    When I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            replicas: 1
      """
    Then the Deployment "llm-vllmworker" eventually has ".spec.replicas" equal to "1"
    And the dgd "llm" eventually has ".status.services.VllmWorker.availableReplicas" equal to "1"

  Scenario: A HorizontalPodAutoscaler targeting a component scales it without a fight
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    When I apply the manifest:
      """
      apiVersion: autoscaling/v2
      kind: HorizontalPodAutoscaler
      metadata:
        name: llm-vllmworker
      spec:
        scaleTargetRef:
          apiVersion: nvidia.com/v1alpha1
          kind: DynamoComponentDeployment
          name: llm-vllmworker
        minReplicas: 3
        maxReplicas: 4
        metrics:
        - type: Resource
          resource:
            name: cpu
            target:
              type: Utilization
              averageUtilization: 80
      """
    Then it is accepted
    # No metrics are fed: the HPA controller raises the component to its minReplicas.
    And the Deployment "llm-vllmworker" eventually has ".spec.replicas" equal to "3"
    And the HorizontalPodAutoscaler "llm-vllmworker" eventually has ".status.desiredReplicas" equal to "3"
    And the dcd "llm-vllmworker" keeps 3 replicas while I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            envs:
            - name: LOG_LEVEL
              value: debug
      """
    And the dgd "llm" eventually has ".status.observedGeneration" equal to "2"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    And the dgd "llm" has ".status.services.VllmWorker.availableReplicas" equal to "3"

  Scenario: A graph whose services use componentType main runs
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: planner-test
      spec:
        services:
          Planner:
            componentType: main
            replicas: 1
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["python3", "-m", "dynamo.planner"]
      """
    Then it is accepted
    And the dgd "planner-test" eventually has ".status.state" equal to "successful"
    And the Deployment "planner-test-planner" has ".spec.template.metadata.labels.nvidia\.com/dynamo-component-type" equal to "main"

  @sim-only
  Scenario: A frontend a main component's shell starts is Ready once its curl-and-jq probe passes; a probe of nothing keeps a pod unready
    # As Dynamo's planner test graphs run their frontend: the command says what serves, not the component type.
    # The probe command runs against what the pod serves: the second service serves nothing on 8001.
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: shell-frontend
      spec:
        services:
          Frontend:
            componentType: main
            replicas: 1
            livenessProbe:
              httpGet:
                path: /health
                port: 8000
              periodSeconds: 2
            readinessProbe:
              exec:
                command:
                - /bin/sh
                - -c
                - 'curl -s http://localhost:8000/health | jq -e ".status == \"healthy\""'
              periodSeconds: 2
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["/bin/sh", "-c"]
                args: ["python3 -m dynamo.frontend --http-port 8000 --router-mode kv"]
          Unserved:
            componentType: main
            replicas: 1
            readinessProbe:
              exec:
                command:
                - /bin/sh
                - -c
                - 'curl -s http://localhost:8001/health | jq -e ".status == \"healthy\""'
              periodSeconds: 2
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["/bin/sh", "-c"]
                args: ["sleep infinity"]
      """
    Then it is accepted
    And the Deployment "shell-frontend-frontend" eventually has ".status.readyReplicas" equal to "1"
    And the Deployment "shell-frontend-unserved" eventually has ".status.unavailableReplicas" equal to "1"
    And the Deployment "shell-frontend-frontend" has ".status.readyReplicas" equal to "1"
    And the dgd "shell-frontend" eventually has ".status.conditions[?(@.type=="Ready")].status" equal to "False"
    And the Deployment "shell-frontend-unserved" has ".status.unavailableReplicas" equal to "1"
