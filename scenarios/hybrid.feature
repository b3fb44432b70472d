@hybrid
Feature: Hybrid rollout of a new version in one namespace, and back
  The cluster-wide release runs the previous release (N); the working tree (N+1) is installed namespace-scoped
  in one namespace with the seeds' commands. The namespace's graphs are handed over with no pod restarted and no
  write by the cluster-wide operator there while N+1 owns it (the API server's audit log); helm uninstall of the
  namespace-scoped release hands them back, with the same checks.

  Scenario: a namespace-scoped release of the working tree takes one namespace's graphs and gives them back
    Given a simulated cluster with no operator
    And I install the previous release cluster-wide as the seeds say
    When I apply every compat graph the simulator can run
    Then every graph becomes Ready
    And I note every graph's pods and objects
    And a client dry-runs a graph through admission every 100 ms
    And a watcher checks every graph is Ready every 250 ms
    When I install the working tree as "dynamo-test" namespace-scoped in the namespace "vllm-disagg" as the seeds say
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
