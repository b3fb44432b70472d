@modes
Feature: Cluster-wide, namespace-scoped and hybrid deployment modes
  A cluster-wide operator runs graphs in every namespace. A namespace-scoped operator runs them in its own
  namespace only, and marks it with the Lease "dynamo-operator-namespace-scope", whose holderIdentity is its
  version. In hybrid mode the cluster-wide operator stays out of every namespace with a live marker Lease, and
  takes it back, changes made meanwhile included, when the Lease is deleted or expires.

  These scenarios run a cluster-wide operator for the whole suite and start namespace-scoped operators in a
  scenario's namespace with a 2 second lease renewed every 500 ms (the defaults are 30 s and 10 s). On the
  simulator and on kind these are operator processes, not releases: a scenario kills one abruptly
  (@local-operator: they need a suite that starts and kills them, and counts writes from an audit log).

  @local-operator
  Scenario: A namespace-scoped operator marks its namespace with its version
    When a namespace-scoped operator of version "v2.0.0-beta" starts in this namespace
    # kubectl get lease -A --field-selector metadata.name=dynamo-operator-namespace-scope
    Then listing the leases named "dynamo-operator-namespace-scope" in all namespaces shows this namespace held by "v2.0.0-beta"
    # kubectl get lease -n <namespace> dynamo-operator-namespace-scope -o jsonpath='{.spec.holderIdentity}'
    And the version of the operator that owns this namespace is "v2.0.0-beta"
    And the Lease "dynamo-operator-namespace-scope" has ".spec.leaseDurationSeconds" equal to "2"
    And the namespace lease is renewed

  @local-operator
  Scenario: Hybrid: the namespace-scoped operator runs the graphs of its namespace and the cluster-wide one stays out
    Given a namespace-scoped operator of version "v2.0.0-beta" runs in this namespace
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
    When I patch the dgd "llm" with:
      """
      spec: {services: {Frontend: {replicas: 2}}}
      """
    Then the Deployment "llm-frontend" eventually has ".spec.replicas" equal to "2"
    And the cluster-wide operator wrote nothing in this namespace while the namespace-scoped operator owned it

  @local-operator
  Scenario: A namespace-scoped operator that dies hands its namespace back when its lease expires
    Given a namespace-scoped operator of version "v2.0.0-beta" runs in this namespace
    And I apply the manifest:
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
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    When the namespace-scoped operator dies
    And I patch the dgd "llm" with:
      """
      spec: {services: {Frontend: {replicas: 3}}}
      """
    Then the namespace lease still exists
    And the namespace lease eventually expires
    And the Deployment "llm-frontend" eventually has ".spec.replicas" equal to "3"
    And the dgd "llm" eventually has ".status.services.Frontend.replicas" equal to "3"
    And the cluster-wide operator wrote nothing in this namespace while the namespace-scoped operator owned it

  @local-operator
  Scenario: A namespace-scoped operator that stops cleanly hands its namespace back at once
    Given a namespace-scoped operator of version "v2.0.0-beta" runs in this namespace
    And I apply the manifest:
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
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    When the namespace-scoped operator stops cleanly
    Then the namespace lease is gone
    When I patch the dgd "llm" with:
      """
      spec: {services: {Frontend: {replicas: 2}}}
      """
    Then the Deployment "llm-frontend" eventually has ".spec.replicas" equal to "2"
    And the cluster-wide operator wrote nothing in this namespace while the namespace-scoped operator owned it

  Scenario: Without a namespace-scoped operator the cluster-wide operator runs every namespace
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
    And the Lease "dynamo-operator-namespace-scope" does not exist
