@upgrade
Feature: Upgrading the operator restarts no workload
  helm upgrade from the previous release (version N, the newest tag before HEAD) to the working tree (N+1),
  with every users' graph of ../shared/compat running. The two are distinct renderers (the image tag is the
  operator version). Where N+1 renders a child differently, the difference reaches a running workload only at
  that service's next spec change, as one normal rollout of that workload (the no-restart policy,
  operator/controllers/adoption.go): after the upgrade every Deployment is still N's rendering, and a service
  the user edits is rendered by N+1 while every other pod keeps running.

  Scenario: helm upgrade from the previous release to the working tree restarts no pod and loses nothing
    Given a simulated cluster with no operator
    And I install the previous release cluster-wide as the seeds say
    When I apply every compat graph the simulator can run
    Then every graph becomes Ready
    And every Deployment of the graphs is still the rendering of the previous release
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
    And every Deployment of the graphs is still the rendering of the previous release
    # How a rendering change reaches the workloads: at the service's next spec change, that workload only.
    When I set the env "SCENARIO_EDIT=1" on the service "VllmDecodeWorker" of the graph "vllm-agg/vllm-agg"
    Then that service's Deployment is rolled out as the rendering of the working tree with the env
    And every graph becomes Ready
    And no other pod of any graph restarted or was replaced
