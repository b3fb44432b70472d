Feature: Upgrading, rolling back and mixing operator versions restarts no workload and loses nothing
  One simulated cluster lives through a release's life, one scenario per stage, each continuing on the
  simulator the one before kept (a stage that fails stops the chain, and the next says so): helm upgrade from
  the previous release (N, the newest tag before HEAD) to the working tree (N+1) with every users' graph of
  ../shared/compat running; the objects stored under N's CRDs under N+1's; a service edited under N+1; helm
  upgrade back to N; then N+1 namespace-scoped in one namespace beside N cluster-wide, and uninstalled; then
  upgraded to N+1 again, with graphs that take up the features added since N.
  The two are distinct renderers (the image tag is the operator version). Where N+1 renders a child
  differently, the difference reaches a running workload only at that service's next spec change, as one
  normal rollout of that workload (the no-restart policy, operator/controllers/adoption.go).

  @upgrade
  Scenario: helm upgrade from the previous release to the working tree restarts no pod and loses nothing
    Given a simulated cluster with no operator
    And I install the previous release cluster-wide as chart/README.md says
    When I apply every compat graph the simulator can run
    Then every graph becomes Ready
    And the CRDs served are those of the previous release
    And every Deployment of the graphs is still the rendering of the previous release
    And I note every graph's pods and objects
    And a client dry-runs a graph through admission every 100 ms
    And a watcher checks every graph is Ready every 250 ms
    When I upgrade the cluster-wide release to the working tree
    Then the cluster-wide release runs the working tree as its leader
    And the CRDs served are those of the working tree
    And the running operator has reconciled every graph
    And every graph and component reads in v1alpha1 and v1beta1
    And every graph stayed Ready throughout
    And not one dry-run admission failed
    And no pod of any graph restarted or was replaced
    And every graph's objects are unchanged
    And every Deployment of the graphs is still the rendering of the previous release
    And the simulator is kept for the next scenario

  # A field new in the working tree's schema must be set here on objects stored under the old one: the
  # tripwire step names such fields (and the downgrade below must then say whether N serves what N+1 stored),
  # unless the step's table of fields inert while absent (features/steps/crds.go) says why an object stored
  # without the field is unaffected, which this scenario's no-restart and unchanged-objects steps then prove.
  # It compares the versions N served; a version new in N+1 (v1beta1) is counted, as nothing is stored in it,
  # and a change of the storage version trips it.
  @crd
  Scenario: objects stored under the previous release's CRDs live on under the working tree's
    Given the simulator the previous scenario kept
    Then the CRDs served are those of the working tree
    And the CRDs of the working tree add no field to those of the previous release
    And every compat object reads back as it was applied
    And every graph and component passes the served validation as stored
    And the running operator has reconciled every graph
    And every graph's objects are unchanged
    And no pod of any graph restarted or was replaced
    And the simulator is kept for the next scenario

  # How a rendering change reaches the workloads: at the service's next spec change, that workload only.
  @upgrade
  Scenario: a service edited after the upgrade rolls out alone, as the working tree's rendering
    Given the simulator the previous scenario kept
    When I set the env "SCENARIO_EDIT=1" on the service "VllmDecodeWorker" of the graph "vllm-agg/vllm-agg"
    Then that service's Deployment is rolled out as the rendering of the working tree with the env
    And every graph becomes Ready
    And no other pod of any graph restarted or was replaced
    And the simulator is kept for the next scenario

  # N serves v1alpha1 alone and its init container applies its CRDs without spec.conversion: every field N+1's
  # installer owned goes (v1beta1, the conversion webhook and, owned by the same field manager, its CA bundle),
  # so the CRDs convert nothing and every object, stored in v1alpha1, reads as before.
  # The rollback after an upgrade: every Deployment is N's rendering but the edited service's, which N+1
  # rendered. v0.1.0 re-applies that one with its own last-applied-hash annotation (it lacks apply.ApplyKept),
  # which bumps the Deployment's generation without changing its pod template: that graph may be seen not
  # Ready until the Deployment controller observes it, no pod restarts, and no other graph may lapse. (A
  # cluster where N+1 rendered every Deployment flips every graph at once on a downgrade to v0.1.0, and
  # v0.1.0's status path, which compares with a cache lagging its own write, strands some under load;
  # the working tree fixes both for later releases: scenarios/README.md.)
  @downgrade
  Scenario: helm upgrade from the working tree back to the previous release restarts no pod and loses nothing
    Given the simulator the previous scenario kept
    And I note every graph's pods and objects
    And a client dry-runs a graph through admission every 100 ms
    And a watcher checks every graph is Ready every 250 ms
    When I upgrade the cluster-wide release to the previous release
    Then the cluster-wide release runs the previous release as its leader
    And the CRDs served are those of the previous release
    And the CRDs convert nothing
    And every graph and component reads in v1alpha1
    And the running operator has reconciled every graph
    And no graph but the edited one was seen not Ready meanwhile, and every graph is Ready again
    And not one dry-run admission failed
    And no pod of any graph restarted or was replaced
    And every graph's objects are unchanged
    And the simulator is kept for the next scenario

  # The cluster-wide release runs N again; N+1 is installed namespace-scoped with chart/README.md's commands. The
  # namespace's graphs are handed over with no pod restarted and no write by the cluster-wide operator there
  # while N+1 owns it (the API server's audit log); helm uninstall hands them back, with the same checks.
  @hybrid
  Scenario: a namespace-scoped release of the working tree takes one namespace's graphs and gives them back
    Given the simulator the previous scenario kept
    And every graph becomes Ready
    And I note every graph's pods and objects
    And a client dry-runs a graph through admission every 100 ms
    And a watcher checks every graph is Ready every 250 ms
    When I install the working tree as "dynamo-test" namespace-scoped in the namespace "vllm-disagg" as chart/README.md says
    Then the release "dynamo-test" owns the namespace "vllm-disagg"
    And the release "dynamo-test" has reconciled every graph in the namespace "vllm-disagg"
    And the cluster-wide operator wrote nothing in the namespace "vllm-disagg" while the release "dynamo-test" owned it
    And no pod of any graph restarted or was replaced
    When I uninstall the namespace-scoped release "dynamo-test"
    Then the namespace "vllm-disagg" is handed back
    And the cluster-wide operator has reconciled every graph in the namespace "vllm-disagg" since it was handed back
    And the cluster-wide operator wrote nothing in the namespace "vllm-disagg" while the release "dynamo-test" owned it
    And every graph stayed Ready throughout
    And not one dry-run admission failed
    And no pod of any graph restarted or was replaced
    And every graph's objects are unchanged
    And the simulator is kept for the next scenario

  # The features added since N, through an upgrade from N (the cluster-wide release runs N again). N's CRDs
  # know neither scalingAdapter, spec.restart nor topologyConstraint and prune them: a graph created with them
  # under N is stored without, and N+1 finds nothing to act on. Graphs N made opt in under N+1: a scaling
  # adapter (an HPA scales it) replaces no pod of the service, a restart replaces exactly that graph's pods.
  # A graph created under N+1 with a topology constraint and an adapter, and the replica count the HPA set,
  # then live through a helm upgrade that replaces the operator's pods.
  @upgrade @day2
  Scenario: graphs given a scaling adapter, a restart or a topology constraint after an upgrade keep their pods through the next one
    Given the simulator the previous scenario kept
    And the cluster-wide release runs the previous release as its leader
    When I create the graph "adapted" in the namespace "day2"
    And I create the graph "restarted" in the namespace "day2"
    And I create the graph "constrained-early" in the namespace "day2"
    Then the graph "day2/constrained-early" was stored without its scaling adapter and topology constraints
    And every graph becomes Ready
    And I note every graph's pods and objects
    And a client dry-runs a graph through admission every 100 ms
    And a watcher checks every graph is Ready every 250 ms
    When I upgrade the cluster-wide release to the working tree
    Then the cluster-wide release runs the working tree as its leader
    And the CRDs served are those of the working tree
    And the running operator has reconciled every graph
    And every graph stayed Ready throughout
    And not one dry-run admission failed
    And no pod of any graph restarted or was replaced
    And every graph's objects are unchanged
    When I give the service "Worker" of the graph "day2/adapted" a scaling adapter
    And an HPA scales that service's adapter to 3 replicas
    Then no pod of any graph restarted or was replaced, and that service gained 2 pods
    And every graph becomes Ready
    And I note every graph's pods and objects
    When I restart the graph "day2/restarted" with the id "after-upgrade"
    Then its restart completes having replaced each of its pods, and no other pod restarted or was replaced
    When I create the graph "constrained" in the namespace "day2"
    Then every graph becomes Ready
    And the pods of the graph "day2/constrained" run in one rack, its worker's on one node
    And I note every graph's pods and objects
    And a watcher checks every graph is Ready every 250 ms
    When I upgrade the cluster-wide release to the working tree again, which replaces its operator pods
    Then the cluster-wide release runs the working tree as its leader
    And the running operator has reconciled every graph
    And every graph stayed Ready throughout
    And no pod of any graph restarted or was replaced
    And every graph's objects are unchanged
    And that service's adapter and component still have 3 replicas
    And the pods of the graph "day2/constrained" run in one rack, its worker's on one node
