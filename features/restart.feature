@restart
Feature: Restarts and rolling updates replace a graph's pods one stage at a time, never below the ready count
  Setting spec.restart.id restarts the graph's services, as `kubectl rollout restart` would each of their
  workloads: Sequential (the default) one service at a time in spec.restart.strategy.order (by name when it is
  empty), the next once every pod of the previous one is replaced and ready; Parallel all at once. Each rollout
  surges first: no pod goes before its replacement is ready. status.restart says which id was acted on, the
  phase, and which services restart now. The same id again does nothing; a new id restarts again. A graph
  cannot be created with spec.restart: a restart is a request against running pods.

  A change of the services' spec rolls the workers first, then the frontend that routes to them, and
  status.rollingUpdate tells which services run the new spec.

  On envtest a test driver moves the Deployments' status as a rollout would; on the simulator the real
  Deployment controller replaces pods that the simulated kubelets make ready.

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
            replicas: 2
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
          decode:
            componentType: worker
            subComponentType: decode
            replicas: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B"]
          prefill:
            componentType: worker
            subComponentType: prefill
            replicas: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--is-prefill-worker"]
      """
    Then it is accepted
    And the dgd "llm" eventually has ".status.state" equal to "successful"

  Scenario: A sequential restart rolls one service at a time, in the given order, never below the desired ready count
    When I patch the dgd "llm" with the following, watching its Deployments until each rolled:
      """
      spec:
        restart:
          id: first
          strategy:
            type: Sequential
            order: [prefill, decode, Frontend]
      """
    Then the Deployments rolled one at a time, in the order "llm-prefill, llm-decode, llm-frontend"
    And no Deployment had fewer ready replicas than it desires during the rollouts
    And the dgd "llm" eventually has ".status.restart.phase" equal to "Completed"
    And the dgd "llm" has ".status.restart.observedID" equal to "first"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    And the Deployment "llm-decode" has ".spec.template.metadata.annotations.nvidia\.com/restartAt" equal to "first"
    And the Deployment "llm-decode" has ".spec.template.spec.containers[?(@.name=="main")].image" equal to "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0"

  Scenario: The same id again restarts nothing; a new id restarts again, in parallel
    When I patch the dgd "llm" with the following, watching its Deployments until each rolled:
      """
      spec:
        restart: {id: first}
      """
    Then the Deployments rolled one at a time, in the order "llm-frontend, llm-decode, llm-prefill"
    And the dgd "llm" eventually has ".status.restart.phase" equal to "Completed"
    When I patch the dgd "llm" with:
      """
      spec:
        restart: {id: first, strategy: {type: Parallel}}
      """
    Then the dgd "llm" eventually has ".status.observedGeneration" equal to "3"
    And the Deployment "llm-frontend" has ".metadata.generation" equal to "2"
    And the dgd "llm" has ".status.restart.phase" equal to "Completed"
    When I patch the dgd "llm" with the following, watching its Deployments until each rolled:
      """
      spec:
        restart: {id: second, strategy: {type: Parallel}}
      """
    Then no Deployment had fewer ready replicas than it desires during the rollouts
    And the dgd "llm" eventually has ".status.restart.phase" equal to "Completed"
    And the dgd "llm" has ".status.restart.observedID" equal to "second"
    And the Deployment "llm-prefill" has ".spec.template.metadata.annotations.nvidia\.com/restartAt" equal to "second"

  Scenario: A spec change rolls the workers first, then the frontend, and the status tells which are done
    When I patch the dgd "llm" with the following, watching its Deployments until each rolled:
      """
      spec:
        services:
          Frontend:
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1
          decode:
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1
          prefill:
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.1
      """
    Then the Deployment "llm-frontend" began to roll only after "llm-decode, llm-prefill" had rolled out
    And no Deployment had fewer ready replicas than it desires during the rollouts
    And the dgd "llm" eventually has ".status.rollingUpdate.phase" equal to "Completed"
    And the dgd "llm" has ".status.rollingUpdate.updatedServices" containing "Frontend"
    And the dgd "llm" has ".status.rollingUpdate.updatedServices" containing "prefill"
    And the dgd "llm" eventually has ".status.state" equal to "successful"

  # The operator's writes are counted from the API server's audit log.
  @audit
  Scenario: A restarted graph is not restarted again when the operator restarts
    When I patch the dgd "llm" with:
      """
      spec:
        restart: {id: first, strategy: {type: Parallel}}
      """
    Then the dgd "llm" eventually has ".status.restart.phase" equal to "Completed"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    When the operator restarts
    Then the operator makes no writes in this namespace within 3 seconds

  Scenario Outline: A graph cannot be created with a restart, in either version
    When I create the manifest:
      """
      apiVersion: nvidia.com/<version>
      kind: DynamoGraphDeployment
      metadata:
        name: born-restarted
      spec:
        restart: {id: one}
        <services>
      """
    Then it is rejected with a message containing "spec.restart must be unset on create"

    Examples:
      | version  | services                                                   |
      | v1alpha1 | services: {Frontend: {componentType: frontend}}            |
      | v1beta1  | components: [{name: Frontend, type: frontend}]             |
