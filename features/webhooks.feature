@webhooks
Feature: Admission webhooks reject what cannot work, with every problem named at once
  The operator serves validating webhooks for DynamoGraphDeployment, DynamoComponentDeployment, DynamoModel and
  DynamoComponent, and a defaulting webhook for DynamoGraphDeployment. They are on by default and fail closed.
  A rejection lists every violation of the object, each with its field path and the rule it breaks, so one
  fix-and-apply round is enough. Deprecated fields are accepted with a warning, never rejected.

  Scenario: Every violation of a graph comes back in one rejection, each naming its field
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        labels:
          "team name": inference
        services:
          Frontend:
            componentType: frontend
            envFromSecret: HF_TOKEN
          VllmWorker:
            componentType: worker
            resources:
              limits:
                gpu: "0.5"
                memory: lots
            volumeMounts:
            - name: model-cache
              mountPoint: /models
      """
    Then it is rejected with a message containing "admission webhook \"validate.dynamographdeployments.nvidia.com\" denied the request"
    And the message also contains "spec.labels: Invalid value: \"team name\""
    And the message also contains "spec.services.Frontend.envFromSecret: Invalid value: \"HF_TOKEN\": must be a valid Secret name"
    And the message also contains "spec.services.VllmWorker.resources.limits.gpu: Invalid value: \"0.5\": must be a non-negative integer"
    And the message also contains "spec.services.VllmWorker.resources.limits.memory: Invalid value: \"lots\""
    And the message also contains "spec.services.VllmWorker.volumeMounts[0].name: Invalid value: \"model-cache\": not found in the graph's spec.pvcs"

  Scenario: A service whose children could not be named is rejected
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        services:
          Prefill_Worker:
            componentType: prefill
          DecodeWorkerWithAVeryLongNameThatNoKubernetesServiceCouldEverCarry:
            componentType: decode
      """
    Then it is rejected with a message containing "spec.services.Prefill_Worker: Invalid value: \"llm-prefill_worker\": the component name <graph>-<lowercased service> is also its Service's name"
    And the message also contains "spec.services.DecodeWorkerWithAVeryLongNameThatNoKubernetesServiceCouldEverCarry"
    And the message also contains "must be no more than 63 characters"

  Scenario: Two services that would share one component name are rejected
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        services:
          Worker:
            componentType: worker
          worker:
            componentType: worker
      """
    Then it is rejected with a message containing "has the same component name as service"

  Scenario: A new graph gets one replica per service and the version of the operator that created it
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        services:
          Frontend:
            componentType: frontend
          Planner:
            componentType: planner
            replicas: 0
      """
    Then it is accepted
    And the dgd "llm" has ".spec.services.Frontend.replicas" equal to "1"
    And the dgd "llm" has ".spec.services.Planner.replicas" equal to "0"
    And the dgd "llm" has the annotation "nvidia.com/dynamo-operator-origin-version"

  Scenario: Deprecated autoscaling is accepted with a warning, not an error
    When I apply the manifest and keep the warnings:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        services:
          VllmWorker:
            componentType: worker
            autoscaling:
              enabled: true
              minReplicas: 1
              maxReplicas: 4
      """
    Then it is accepted with a warning containing "spec.services.VllmWorker.autoscaling: deprecated and has no effect"

  Scenario: The backend and a service's single- or multinode shape are immutable
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
          VllmWorker:
            componentType: worker
            multinode:
              nodeCount: 2
      """
    And it is accepted
    When I try to patch the dgd "llm" with:
      """
      spec:
        backendFramework: sglang
        services:
          Frontend:
            multinode:
              nodeCount: 2
          VllmWorker:
            multinode: null
      """
    Then it is rejected with a message containing "spec.backendFramework: Invalid value: \"sglang\": field is immutable; delete and recreate the DynamoGraphDeployment to change it"
    And the message also contains "spec.services.Frontend.multinode: Invalid value: field is immutable: the service was single-node and would become multinode"
    And the message also contains "spec.services.VllmWorker.multinode: Invalid value: field is immutable: the service was multinode and would become single-node"
    When I try to patch the dgd "llm" with:
      """
      spec:
        services:
          VllmWorker:
            replicas: 3
            multinode:
              nodeCount: 4
      """
    Then it is accepted

  Scenario: A model's type and base model are immutable
    Given I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoModel
      metadata:
        name: adapter
      spec:
        modelName: my-lora
        baseModelName: Qwen/Qwen3-0.6B
        modelType: lora
        source:
          uri: hf://org/my-lora
      """
    And it is accepted
    When I try to patch the dm "adapter" with:
      """
      spec:
        baseModelName: Qwen/Qwen3-8B
        modelType: adapter
      """
    Then it is rejected with a message containing "spec.modelType: Invalid value: \"adapter\": field is immutable; delete and recreate the DynamoModel to change it"
    And the message also contains "spec.baseModelName: Invalid value: \"Qwen/Qwen3-8B\": field is immutable"

  Scenario: A component deployment's artifact is immutable, and its name must fit its Service
    Given I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponentDeployment
      metadata:
        name: decode
      spec:
        componentType: worker
        dynamoComponent: decode:v1
      """
    And it is accepted
    When I try to patch the dcd "decode" with:
      """
      spec:
        dynamoComponent: decode:v2
      """
    Then it is rejected with a message containing "spec.dynamoComponent: Invalid value: \"decode:v2\": field is immutable; delete and recreate the DynamoComponentDeployment to change it"
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponentDeployment
      metadata:
        name: decode.v2
      spec:
        componentType: worker
      """
    Then it is rejected with a message containing "metadata.name: Invalid value: \"decode.v2\": the component's Deployment and Service take its name, which must be a DNS-1035 label"

  Scenario: An image build with a negative timeout or a bad secret name is rejected
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponent
      metadata:
        name: frontend
      spec:
        dynamoComponent: frontend:v1
        imageBuildTimeout: -5m
        dockerConfigJsonSecretName: Registry Credentials
      """
    Then it is rejected with a message containing "spec.imageBuildTimeout: Invalid value: \"-5m0s\": must be greater than 0"
    And the message also contains "spec.dockerConfigJsonSecretName: Invalid value: \"Registry Credentials\": must be a valid Secret name"

  Scenario: The webhooks fail closed and judge creates and updates of every kind
    Then the ValidatingWebhookConfiguration "dynamo-operator-validating" has ".webhooks[*].failurePolicy" equal to "Fail Fail Fail Fail"
    And the ValidatingWebhookConfiguration "dynamo-operator-validating" has ".webhooks[*].rules[0].resources[0]" equal to "dynamographdeployments dynamocomponentdeployments dynamomodels dynamocomponents"
    And the ValidatingWebhookConfiguration "dynamo-operator-validating" has ".webhooks[0].rules[0].operations" equal to "[\"CREATE\",\"UPDATE\"]"
    And the MutatingWebhookConfiguration "dynamo-operator-mutating" has ".webhooks[0].failurePolicy" equal to "Fail"
    And the MutatingWebhookConfiguration "dynamo-operator-mutating" has ".webhooks[0].sideEffects" equal to "None"
