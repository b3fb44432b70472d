@migration
Feature: Taking over a cluster Dynamo's operator ran, and running beside it
  Platform teams adopting this operator already run Dynamo's own. They uninstall Dynamo's operator (Helm keeps
  its CRDs and everything stored under them) and helm install ours, whose CRDs replace Dynamo's in place. Ours
  adopts Dynamo's components and Deployments under their names (hash suffixes included), keeps their pod
  templates until a service's spec changes, releases the claims Dynamo's operator tied to their graphs, and
  writes statuses in Dynamo's shape: no pod restarts, no second workload holding the same GPUs
  (docs/migration.md).

  Scenario: helm install of our chart takes over Dynamo's graphs without restarting a pod
    Given a simulated cluster with no operator
    And the cluster Dynamo's operator left: its CRDs, graphs, components and children in a namespace "team-a"
    And every workload Dynamo's operator made runs Ready pods
    And Dynamo's operator owns the claim "model-cache" by the graph "vllm-agg"
    And I note every pod, workload, claim and component there
    When I helm install our chart as chart/README.md says
    Then the API server serves our CRDs in place of Dynamo's
    And every graph there becomes Ready by our operator's status
    And our operator has written every graph's status and adopted every workload there
    And no pod there was restarted or replaced
    And there is exactly one Deployment per component and no workload was created, replaced or deleted
    And no claim there was deleted
    And every component's and graph's status reads in Dynamo's shape and in ours
    And I report what was adopted in place, replaced, created and deleted
    When I delete the graph "vllm-agg"
    Then the graph "vllm-agg" and its components are gone and the claim "model-cache" is kept, released from it

  # Dynamo's current operator stores graphs and components in nvidia.com/v1beta1 and converts them through its
  # webhook, whose Service goes with its release. Ours serve both versions through their own webhook; our operator
  # rewrites every object in v1alpha1, its storage version, and trims storedVersions to it (operator/storagemigration).
  @v1beta1-storage
  Scenario: helm install of our chart takes over graphs Dynamo's current operator stored in v1beta1
    Given a simulated cluster with no operator
    And the cluster Dynamo's current operator left, graphs and components stored in v1beta1: its CRDs, graphs, components and children in a namespace "team-b"
    And every workload Dynamo's operator made runs Ready pods
    And I note every pod, workload, claim and component there
    When I helm install our chart as chart/README.md says
    Then every graph there becomes Ready by our operator's status
    And our operator has written every graph's status and adopted every workload there
    And the graphs and components are stored in v1alpha1 alone: storedVersions is [v1alpha1]
    And no pod there was restarted or replaced
    And there is exactly one Deployment per component and no workload was created, replaced or deleted
    And every graph and component reads in v1alpha1 and in v1beta1
    And every component's and graph's status reads in Dynamo's shape and in ours
    And I report what was adopted in place, replaced, created and deleted

  # Dynamo's namespace-scoped operator marks its namespace with the Lease dynamo-operator-namespace-scope,
  # holderIdentity namespace-restricted-operator-<version>, acquireTime and no renewTime until it first renews.
  # Our cluster-wide operator must keep out of that namespace from the moment the Lease exists.
  Scenario: our cluster-wide operator keeps out of the namespace of Dynamo's namespace-scoped operator
    Given a simulated cluster with no operator
    And I install the working tree cluster-wide as chart/README.md says
    And the graph "vllm-agg" of "../shared/compat/examples/backends/vllm/deploy/agg.yaml" runs Ready in a namespace for Dynamo's operator and one for ours
    And our operator is quiet in Dynamo's namespace
    When Dynamo's namespace-scoped operator starts in its namespace: its Lease, holder "namespace-restricted-operator-0.7.1", no renewTime
    And I scale the service "Frontend" of the graph to 2 in both namespaces
    Then our operator scales "Frontend" to 2 in its own namespace
    When Dynamo's namespace-scoped operator renews its Lease
    And I scale the service "Frontend" of the graph to 3 in both namespaces
    Then our operator scales "Frontend" to 3 in its own namespace
    And "Frontend" still runs 1 replica in Dynamo's namespace
    And our operator has written nothing in Dynamo's namespace since the Lease was created
    When Dynamo's namespace-scoped operator stops and deletes its Lease
    Then our operator scales "Frontend" to 3 in Dynamo's namespace
