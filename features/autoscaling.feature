@autoscaling
Feature: A scaling adapter owns the replicas of a service that opts in
  A service that opts in (scalingAdapter in v1beta1) gets a DynamoGraphDeploymentScalingAdapter, `dgdsa`,
  named and shaped as Dynamo's: HPA, KEDA, Dynamo's planner and kubectl scale it through its scale
  subresource, and the operator carries its replicas to the service's component. The graph's spec is never
  written and never reverts them; an edit of those replicas in the graph is refused, as Dynamo refuses it.

  Background:
    Given I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        backendFramework: vllm
        components:
        - name: Frontend
          type: frontend
          podTemplate:
            spec:
              containers:
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
        - name: VllmDecodeWorker
          type: worker
          replicas: 1
          scalingAdapter: {}
          podTemplate:
            spec:
              containers:
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B"]
                resources:
                  limits:
                    nvidia.com/gpu: "1"
      """
    Then it is accepted

  Scenario: The adapter scales the worker through its scale subresource, and the graph never reverts it
    Then the dgdsa "llm-vllmdecodeworker" eventually exists
    And the dgdsa "llm-vllmdecodeworker" has ".spec.replicas" equal to "1"
    And the dgdsa "llm-vllmdecodeworker" has ".spec.dgdRef.serviceName" equal to "VllmDecodeWorker"
    And the dgdsa "llm-vllmdecodeworker" has ".metadata.ownerReferences[0].name" equal to "llm"
    And the dgdsa "llm-frontend" does not exist
    When I scale the dgdsa "llm-vllmdecodeworker" to 3
    Then the dcd "llm-vllmdecodeworker" eventually has ".spec.replicas" equal to "3"
    And the dgdsa "llm-vllmdecodeworker" eventually has ".status.replicas" equal to "3"
    And the dgdsa "llm-vllmdecodeworker" has ".status.selector" containing "llm-vllmdecodeworker"
    And the dcd "llm-vllmdecodeworker" keeps 3 replicas while I patch the dgd "llm" with:
      """
      spec:
        services:
          VllmDecodeWorker:
            envs:
            - name: LOG_LEVEL
              value: debug
      """
    And the dgd "llm" has ".spec.services.VllmDecodeWorker.replicas" equal to "1"

  Scenario: A graph edit of the replicas the adapter owns is refused, as Dynamo refuses it
    Given the dgdsa "llm-vllmdecodeworker" eventually exists
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1beta1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        backendFramework: vllm
        components:
        - name: Frontend
          type: frontend
          podTemplate:
            spec:
              containers:
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
        - name: VllmDecodeWorker
          type: worker
          replicas: 4
          scalingAdapter: {}
          podTemplate:
            spec:
              containers:
              - name: main
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B"]
                resources:
                  limits:
                    nvidia.com/gpu: "1"
      """
    Then it is rejected with a message containing "spec.components[1].replicas: Forbidden: cannot be modified directly when scaling adapter is enabled"
    And the message also contains "DynamoGraphDeploymentScalingAdapter llm-vllmdecodeworker"

  # The window spans four of the HPA controller's 15 s syncs and the operator's reconciles of the graph
  # after the scale-up; for a longer one, give the step more minutes. @external-metrics: the simulator serves
  # the external metrics API from the namespace's ConfigMap; a cluster without that API leaves it out.
  @sim-only @external-metrics
  Scenario: An HPA on the adapter scales the worker from an external metric, and nothing reverts it
    Given the dgd "llm" eventually has ".status.state" equal to "successful"
    And the external metric "dynamo_queued_requests" in this namespace is "30"
    When I apply the manifest:
      """
      apiVersion: autoscaling/v2
      kind: HorizontalPodAutoscaler
      metadata:
        name: llm-decode
      spec:
        scaleTargetRef:
          apiVersion: nvidia.com/v1alpha1
          kind: DynamoGraphDeploymentScalingAdapter
          name: llm-vllmdecodeworker
        minReplicas: 1
        maxReplicas: 4
        metrics:
        - type: External
          external:
            metric:
              name: dynamo_queued_requests
            target:
              type: AverageValue
              averageValue: "10"
      """
    Then it is accepted
    # 30 queued requests at 10 a replica: 3 replicas.
    And the dcd "llm-vllmdecodeworker" eventually has 3 replicas, and the time since the last apply is reported
    And the dgd "llm" eventually has ".status.services.VllmDecodeWorker.availableReplicas" equal to "3"
    And the HorizontalPodAutoscaler "llm-decode" eventually has ".status.currentReplicas" equal to "3"
    And for 1 minute the dcd "llm-vllmdecodeworker" and the dgdsa "llm-vllmdecodeworker" keep 3 replicas, and the writes to them are reported
    And the dgd "llm" has ".spec.services.VllmDecodeWorker.replicas" equal to "1"
