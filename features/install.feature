@install @sim-only
Feature: Installed the way production installs it: the Helm chart
  Users install the operator with the dynamo-platform chart, as Dynamo's docs say:
  helm install dynamo-platform <chart> --namespace dynamo-system --create-namespace. Its pods run the operator
  image under the chart's ServiceAccount with the chart's RBAC, and the API server calls its webhooks through
  the chart's Service. These scenarios need pods that really run the operator image and helm, so they run on
  the simulator (make features-sim), or on any cluster that can pull the image, not on envtest.

  The suite itself runs on the release dynamo-platform in dynamo-system; a scenario that uninstalls it
  installs it again, and every other release a scenario installs is uninstalled when it ends.

  Scenario: Uninstall leaves nothing behind but the CRDs, and chart/README.md's install brings the operator back
    When I uninstall the release "dynamo-platform"
    Then nothing of the release "dynamo-platform" is left in the cluster but the CRDs
    When I install the operator as chart/README.md says
    Then the release "dynamo-platform" runs 2 Ready operator pods
    When I apply the file "../shared/compat/examples/backends/vllm/deploy/agg.yaml"
    Then it is accepted
    And the dgd "vllm-agg" eventually has ".status.state" equal to "successful"

  Scenario: An invalid graph is refused by the chart-installed webhook, called through the chart's Service
    Then the webhooks of the release "dynamo-platform" are called through its Service "dynamo-platform-dynamo-operator-webhook"
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        services:
          My_Worker:
            componentType: worker
      """
    Then it is rejected with a message containing "admission webhook \"validate.dynamographdeployments.nvidia.com\" denied the request"

  Scenario: Hybrid: a namespace-scoped release of another version beside the cluster-wide one
    When I install the chart as "dynamo-test" in this namespace with "--set dynamo-operator.namespaceRestriction.enabled=true --set dynamo-operator.controllerManager.manager.image.tag=v2.0.0-beta"
    Then the release "dynamo-test" runs 2 Ready operator pods
    And the version of the operator that owns this namespace is "v2.0.0-beta"
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
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
      """
    Then the dgd "llm" eventually has ".status.state" equal to "successful"

  Scenario: Two replicas (the default) with leader election: the leader pod is deleted and the other takes over
    When I install the chart as "dynamo-ha" in this namespace with "--set dynamo-operator.namespaceRestriction.enabled=true"
    Then the release "dynamo-ha" runs 2 Ready operator pods
    And one pod of the release "dynamo-ha" holds its leader election Lease
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
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.0
      """
    Then the dgd "llm" eventually has ".status.state" equal to "successful"
    When I keep sending admission requests
    And I delete the leader pod of the release "dynamo-ha"
    Then another pod of the release "dynamo-ha" becomes the leader
    When I patch the dgd "llm" with:
      """
      spec: {services: {Frontend: {replicas: 2}}}
      """
    Then the Deployment "llm-frontend" eventually has ".spec.replicas" equal to "2"
    And the dgd "llm" eventually has ".status.services.Frontend.replicas" equal to "2"
    # The deleted pod drains its webhooks before it stops (--webhook-drain).
    And no admission request has failed

  Scenario: helm upgrade changing a value takes effect
    When I install the chart as "dynamo-up" in this namespace with "--set dynamo-operator.namespaceRestriction.enabled=true --set dynamo-operator.controllerManager.replicas=1"
    Then the release "dynamo-up" runs 1 Ready operator pod
    When I upgrade the release "dynamo-up" with "--set dynamo-operator.controllerManager.replicas=2 --set dynamo-operator.logLevel=debug"
    Then the release "dynamo-up" runs 2 Ready operator pods
    And the release "dynamo-up" runs its operator with "LOG_LEVEL=debug"

  Scenario: A second cluster-wide install is refused, naming the existing release
    Then installing the chart as "dynamo-second" in this namespace is refused with a message containing "a cluster-wide Dynamo operator is already installed in this cluster by release \"dynamo-platform\" in namespace \"dynamo-system\""
