@metrics @envtest-only
Feature: The operator's metrics show what it did
  The operator serves Prometheus metrics on /metrics (HTTPS; a scraper needs a token allowed to "get /metrics"):
  reconciles by resource type and result, admission denials by the rule that failed, and an inventory of the
  graphs and components by namespace and state, whose series go when their last object goes. Tagged
  envtest-only: the suite scrapes the in-process operator; on the simulator the operator runs in a network
  namespace of its own.

  Scenario: A graph created, scaled, refused an invalid update and deleted shows in the scraped series
    Given the operator's metrics are scraped
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
            replicas: 1
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0
          VllmWorker:
            componentType: worker
            replicas: 1
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0
      """
    Then it is accepted
    And the DynamoGraphDeployment "llm" eventually has ".status.state" equal to "successful"
    And the metrics eventually count more reconciles of DynamoGraphDeployment than before
    And the metrics eventually count more reconciles of DynamoComponentDeployment than before
    And the metrics eventually count 1 DynamoGraphDeployment in state "successful" in this namespace
    And the metrics eventually count 2 DynamoComponentDeployment in state "ready" in this namespace

    When I patch the DynamoGraphDeployment "llm" with:
      """
      spec:
        services:
          VllmWorker:
            replicas: 3
      """
    Then the DynamoComponentDeployment "llm-vllmworker" eventually has ".spec.replicas" equal to "3"
    And the DynamoGraphDeployment "llm" eventually has ".status.state" equal to "successful"
    And the metrics eventually count 2 DynamoComponentDeployment in state "ready" in this namespace

    When I try to patch the DynamoGraphDeployment "llm" with:
      """
      spec:
        services:
          VllmWorker:
            resources:
              limits:
                gpu: "0.5"
      """
    Then it is rejected with a message containing "spec.services.VllmWorker.resources.limits.gpu"
    And the metrics eventually count a denial of UPDATE DynamoGraphDeployment for the rule "resource_invalid"

    When I delete the DynamoGraphDeployment "llm" with background propagation
    Then the DynamoGraphDeployment "llm" is eventually gone
    And the metrics eventually have no resources_total series for this namespace
