@faults
Feature: Faults lose nothing
  The operator can be killed at any instant (SIGKILL: no goodbye, no Lease released), its API server can
  restart, a node can go dark and its webhook certificate can expire. None of it may duplicate, orphan or
  lose a child, or leave anything behind once the graphs are deleted; the certificate's expiry may not fail
  an admission.

  The release runs one operator replica (the chart's single-replica install): every kill leaves no operator
  at all, the hardest case for resuming the work, and the graph writes it refuses meanwhile are retried and
  counted. Two replicas, the chart's default, and faults that take the leader away (killed, its node lost or
  drained, an upgrade) are ha.feature's. Node loss installs the chart's defaults on a simulator of its own: a
  lost node takes the operator processes on it along (sim/faults node-loss), and a single replica that
  happened to run beside the worker would leave no operator to see the graph go pending; with two replicas on
  different nodes one always survives, whichever node the worker ran on.

  The graphs are small: a frontend and a CPU-only worker, one replica each. Each faulted graph must end with
  exactly the children of a reference graph made with no fault (components, Deployments, ReplicaSets, pods,
  Services, discovery ServiceAccount, Role and RoleBinding). Random moments are "before the k-th graph" and
  come from a seed the run prints; DYNAMO_FAULT_SEED=<seed> replays them.

  The scenarios but node loss share one simulator and one cluster-wide release, each continuing where the
  one before left it (a failed one stops the chain, and the next says so): each works in a namespace of its
  own and deletes its graphs at the end, proving nothing is left, so the next one starts from a clean slate.

  Scenario: The operator killed at random moments while 100 graphs are created, and while they are deleted
    Given a simulated cluster with no operator
    And I install the working tree cluster-wide as chart/README.md says with 1 operator replica
    And a small graph "reference" is Ready in the namespace "faults-reference" as the reference
    When I create 100 small graphs in the namespace "faults" while the operator is killed 3 times at random moments
    Then all 100 graphs in the namespace "faults" become Ready
    And each graph in the namespace "faults" has exactly the children of the reference graph
    And no object in the namespace "faults" is orphaned
    When I delete 100 small graphs in the namespace "faults" while the operator is killed 3 times at random moments
    Then nothing the graphs owned is left in the namespace "faults"
    And the simulator is kept for the next scenario

  Scenario: The API server restarts while graphs are created
    Given the simulator the previous scenario kept
    And a small graph "reference" is Ready in the namespace "faults-reference" as the reference
    When I create 40 small graphs in the namespace "faults-apiserver" while the API server restarts once at a random moment
    Then all 40 graphs in the namespace "faults-apiserver" become Ready
    And each graph in the namespace "faults-apiserver" has exactly the children of the reference graph
    And no object in the namespace "faults-apiserver" is orphaned
    When I delete the small graphs in the namespace "faults-apiserver"
    Then nothing the graphs owned is left in the namespace "faults-apiserver"
    And the simulator is kept for the next scenario

  Scenario: The webhook certificate expires under admission load with no failed admission
    Given the simulator the previous scenario kept
    And a client dry-runs a graph through admission every 100 ms
    When the webhook certificate of the cluster-wide release expires
    Then the certificate Secret eventually holds a renewed certificate
    And the admission client keeps sending for 10 seconds
    And not one dry-run admission failed

  Scenario: A lost node's pods move elsewhere; the graph goes pending, then Ready
    Given a simulated cluster with no operator
    And I install the working tree cluster-wide as chart/README.md says
    And the cluster-wide release runs 2 Ready operator replicas on different nodes, one leading
    And a graph "llm" with a GPU worker is Ready in the namespace "faults-node"
    When the node running its worker is lost
    Then the graph goes pending and then Ready again with its worker on another node
