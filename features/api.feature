@api
Feature: The nvidia.com API accepts what Dynamo users write, in v1alpha1 and v1beta1, and rejects what is malformed
  Platform teams keep their existing DynamoGraphDeployment and DynamoModel manifests, and write new graphs
  as Dynamo's current documentation does, in nvidia.com/v1beta1. Every one of them must be accepted
  unchanged and stored without losing a field, in the version it was written in, while malformed objects
  are rejected by the API server with a message that names the field, where it was written, and the rule.

  Scenario: Every manifest Dynamo's users run is accepted and stored unchanged
    Then every manifest under "../shared/compat" is accepted and reads back unchanged

  Scenario: Every manifest of Dynamo's current documentation is accepted in v1beta1, created or applied, and reads in v1alpha1 too
    Then every manifest under "../shared/compat-v1beta1" is accepted and reads back unchanged when created and when applied server-side, and reads in "nvidia.com/v1alpha1"

  Scenario: The disaggregated graph of the operator guide is accepted
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: disagg
      spec:
        envs:
        - name: GLOBAL_ENV_VAR
          value: some_global_value
        services:
          Frontend:
            replicas: 1
            envs:
            - name: SPECIFIC_ENV_VAR
              value: some_specific_value
          Processor:
            replicas: 1
            envs:
            - name: SPECIFIC_ENV_VAR
              value: some_specific_value
          VllmWorker:
            replicas: 1
            envs:
            - name: SPECIFIC_ENV_VAR
              value: some_specific_value
          PrefillWorker:
            replicas: 1
            envs:
            - name: SPECIFIC_ENV_VAR
              value: some_specific_value
      """
    Then it reads back unchanged
    And the dgd "disagg" has ".spec.services.VllmWorker.envs[0].value" equal to "some_specific_value"

  Scenario: The GitOps example with a per-service model cache claim is accepted
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm-agg
      spec:
        services:
          Frontend:
            replicas: 1
            envs:
            - name: SPECIFIC_ENV_VAR
              value: some_specific_value
          Processor:
            replicas: 1
            envs:
            - name: SPECIFIC_ENV_VAR
              value: some_specific_value
          VllmWorker:
            replicas: 1
            envs:
            - name: SPECIFIC_ENV_VAR
              value: some_specific_value
            pvc:
              name: vllm-model-storage
              mountPath: /models
              size: 100Gi
      """
    Then it reads back unchanged
    And the DynamoGraphDeployment "llm-agg" has ".spec.services.VllmWorker.pvc.size" equal to "100Gi"

  Scenario: The image-build flow of the older guide is accepted: a graph, a component deployment and a component
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponent
      metadata:
        name: frontend--jh2o6dqzpsgfued4
      spec:
        dynamoComponent: frontend:jh2o6dqzpsgfued4
      ---
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: disagg
      spec:
        dynamoComponent: frontend:jh2o6dqzpsgfued4
        envs:
        - name: GLOBAL_ENV_VAR
          value: some_global_value
        services:
          Frontend:
            replicas: 1
          Router:
            replicas: 0
            envs:
            - name: SPECIFIC_ENV_VAR
              value: some_specific_value
      ---
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponentDeployment
      metadata:
        name: test-41fa991-vllmworker
      spec:
        dynamoNamespace: dynamo
        dynamoComponent: frontend:jh2o6dqzpsgfued4
        dynamoTag: graphs.disagg:Frontend
        envs:
        - name: DYN_DEPLOYMENT_CONFIG
          value: '<long JSON config>'
        externalServices:
          PrefillWorker:
            deploymentSelectorKey: dynamo
            deploymentSelectorValue: PrefillWorker/dynamo
        resources:
          limits:
            cpu: "10"
            gpu: "1"
            memory: 20Gi
          requests:
            cpu: "500m"
            gpu: "1"
            memory: 20Gi
        serviceName: Frontend
      """
    Then it reads back unchanged
    And the dgd "disagg" has ".spec.services.Router.replicas" equal to "0"
    And the dcd "test-41fa991-vllmworker" has ".spec.resources.limits.gpu" equal to "1"

  Scenario: A DynamoModel of type base needs no source and defaults its type
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoModel
      metadata:
        name: qwen
      spec:
        modelName: Qwen/Qwen3-0.6B
        baseModelName: Qwen/Qwen3-0.6B
      """
    Then it is accepted
    And the dm "qwen" has ".spec.modelType" equal to "base"

  Scenario: An unknown backend framework is rejected, naming the field and the allowed values
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: bad-backend
      spec:
        backendFramework: pytorch
        services:
          Frontend:
            componentType: frontend
      """
    Then it is rejected with a message containing "spec.backendFramework"
    And the message also contains "supported values: \"sglang\", \"vllm\", \"trtllm\""

  Scenario: Any component type is accepted, as in Dynamo's CRD, and optional fields may be written as null
    Dynamo's planner tests and recipes use componentType main; tools that template manifests write unset
    optional fields as null, which server-side apply refuses unless the schema allows it.
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: main-type
      spec:
        services:
          Main:
            componentType: main
            subComponentType: null
            extraPodSpec:
              containers: null
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
      """
    Then it is accepted
    And the dgd "main-type" has ".spec.services.Main.componentType" equal to "main"
    And the dgd "main-type" has ".spec.services.Main.extraPodSpec.mainContainer.image" equal to "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0"

  Scenario: Negative replicas are rejected
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: negative
      spec:
        services:
          Worker:
            componentType: worker
            replicas: -1
      """
    Then it is rejected with a message containing "spec.services.Worker.replicas"
    And the message also contains "should be greater than or equal to 0"

  Scenario: An unknown field is rejected by server-side apply, not silently dropped
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: typo
      spec:
        services:
          Frontend:
            componentType: frontend
            replicaz: 2
      """
    Then it is rejected with a message containing ".spec.services.Frontend.replicaz: field not declared in schema"

  Scenario: An unknown field is rejected by a create with strict field validation, as kubectl sends it
    When I create the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: typo
      spec:
        services:
          Frontend:
            componentType: frontend
            extraPodSpec:
              mainContainer:
                imagee: vllm-runtime:1.0
      """
    Then it is rejected with a message containing "unknown field \"spec.services.Frontend.extraPodSpec.mainContainer.imagee\""

  Scenario: A graph without services is rejected
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: empty
      spec:
        backendFramework: vllm
      """
    Then it is rejected with a message containing "spec.services: Required value"

  Scenario: A graph with an empty services map is rejected
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: empty
      spec:
        services: {}
      """
    Then it is rejected with a message containing "spec.services"
    And the message also contains "should have at least 1 properties"

  Scenario: A LoRA model without a source is rejected
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoModel
      metadata:
        name: adapter
      spec:
        modelName: my-lora
        baseModelName: Qwen/Qwen3-0.6B
        modelType: lora
      """
    Then it is rejected with a message containing "spec.source.uri"
    And the message also contains "a lora model needs source.uri starting with s3:// or hf://"

  Scenario: A LoRA model from an unsupported scheme is rejected
    When I apply the manifest:
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
          uri: https://example.com/lora.bin
      """
    Then it is rejected with a message containing "spec.source.uri"

  Scenario: A multinode service must span at least two nodes
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: one-node
      spec:
        services:
          Worker:
            componentType: worker
            multinode:
              nodeCount: 1
      """
    Then it is rejected with a message containing "spec.services.Worker.multinode.nodeCount"
    And the message also contains "should be greater than or equal to 2"

  Scenario: A claim the operator should create needs its storage class, size and access mode
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: cache
      spec:
        pvcs:
        - name: model-cache
          create: true
        services:
          Worker:
            componentType: worker
      """
    Then it is rejected with a message containing "spec.pvcs[0]"
    And the message also contains "create: true needs storageClass, size and volumeAccessMode"

  Scenario: A component reference must be name:version
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponent
      metadata:
        name: frontend
      spec:
        dynamoComponent: Frontend
      """
    Then it is rejected with a message containing "spec.dynamoComponent"

  Scenario: A v1beta1 graph is rejected at the fields as the user wrote them: /dev/shm, pod labels, a Secret's name
    The operator's rules run on the stored v1alpha1 form; each violation is named at its v1beta1 path, the
    main container counted where it sits among the pod template's containers.
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: bad-worker
      spec:
        components:
        - name: Frontend
          type: frontend
        - name: VllmDecodeWorker
          type: worker
          sharedMemorySize: -1Gi
          podTemplate:
            metadata:
              labels:
                "team a": inference
            spec:
              containers:
              - name: proxy
                image: envoy:1.31
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
                envFrom:
                - secretRef:
                    name: HF_Token
      """
    Then it is rejected with a message containing "spec.components[1].sharedMemorySize: Invalid value: \"-1Gi\": must be greater than 0"
    And the message also contains "sharedMemorySize: \"0\""
    And the message also contains "spec.components[1].podTemplate.metadata.labels: Invalid value: \"team a\""
    And the message also contains "spec.components[1].podTemplate.spec.containers[1].envFrom[0]: Invalid value: \"HF_Token\": must be a valid Secret name"

  Scenario: A v1beta1 compilation cache naming a claim that cannot exist is rejected at its pvcName
    When I create the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: cache
      spec:
        components:
        - name: VllmDecodeWorker
          type: worker
          compilationCache:
            pvcName: Compilation_Cache
      """
    Then it is rejected with a message containing "spec.components[0].compilationCache.pvcName: Invalid value: \"Compilation_Cache\": must be a valid PersistentVolumeClaim name"

  Scenario: A v1beta1 component whose children's names would be too long is rejected at the component
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: a-graph-with-a-long-name-for-its-children
      spec:
        components:
        - name: Frontend
          type: frontend
        - name: AWorkerWhoseNameMakesTheServiceNameTooLong
          type: worker
      """
    Then it is rejected with a message containing "spec.components[1]: Invalid value: \"a-graph-with-a-long-name-for-its-children-aworkerwhosenamemakestheservicenametoolong\""
    And the message also contains "must be no more than 63 characters"

  Scenario: v1beta1 component names are unique regardless of case
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: twins
      spec:
        components:
        - name: Frontend
          type: frontend
        - name: frontend
          type: worker
      """
    Then it is rejected with a message containing "spec.components: Invalid value: component names must be unique case-insensitively"

  Scenario: A v1beta1 graph has at most one endpoint picker
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: two-pickers
      spec:
        components:
        - name: Epp
          type: epp
        - name: EppCanary
          type: epp
      """
    Then it is rejected with a message containing "spec.components: Invalid value: at most one component may have type epp"

  Scenario: A v1beta1 graph cannot be created with a restart request
    When I create the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: restarted
      spec:
        restart:
          id: first
        components:
        - name: Frontend
          type: frontend
      """
    Then it is rejected with a message containing "spec.restart must be unset on create; set spec.restart.id after creation to request a restart"

  Scenario: An unknown v1beta1 field is rejected by server-side apply at its path
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: typo
      spec:
        components:
        - name: Frontend
          type: frontend
          replicaz: 2
      """
    Then it is rejected with a message containing ".spec.components[name=\"Frontend\"].replicaz: field not declared in schema"

  Scenario Outline: Each kind is served with its short name and the columns kubectl shows, in each of its versions
    Then the API server serves "<resource>" in "nvidia.com/<version>" with short name "<short>"
    And "kubectl get <short>.<version>.nvidia.com" shows the columns "<columns>"

    Examples:
      | resource                             | version  | short | columns                                    |
      | dynamographdeployments               | v1alpha1 | dgd   | Name, Ready, State, Backend, Age           |
      | dynamographdeployments               | v1beta1  | dgd   | Name, Ready, State, Backend, Age           |
      | dynamocomponentdeployments           | v1alpha1 | dcd   | Name, Type, Available, Desired, Ready, Age |
      | dynamocomponentdeployments           | v1beta1  | dcd   | Name, Type, Available, Desired, Ready, Age |
      | dynamomodels                         | v1alpha1 | dm    | Name, Model, Base, Type, Ready, Total, Age |
      | dynamocomponents                     | v1alpha1 | dc    | Name, Component, Image-Ready, Age          |
      | dynamoworkermetadatas                | v1alpha1 | dwm   | Name, Age                                  |
      | dynamographdeploymentscalingadapters | v1alpha1 | dgdsa | Name, DGD, SERVICE, REPLICAS, AGE          |
      | dynamographdeploymentscalingadapters | v1beta1  | dgdsa | Name, DGD, SERVICE, REPLICAS, AGE          |

  # The runtime writes these discovery records itself (DYN_DISCOVERY_BACKEND=kubernetes), under the
  # graph's discovery ServiceAccount; the data is its own JSON, kept as written.
  Scenario: A worker's discovery record is stored as the runtime writes it
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoWorkerMetadata
      metadata:
        name: llm-vllmworker-6c9d-x2
      spec:
        data:
          instance_id: 7587888160958628000
          endpoints:
            generate: {namespace: dynamo, component: backend}
      """
    Then it is accepted
    And it reads back unchanged

  Scenario: A component deployment scales through the scale subresource, as kubectl scale and an HPA do
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponentDeployment
      metadata:
        name: decode
      spec:
        componentType: worker
        replicas: 1
      """
    Then it is accepted
    When I scale the dcd "decode" to 3
    Then the dcd "decode" has ".spec.replicas" equal to "3"
