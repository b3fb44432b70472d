@ha
Feature: Two operator replicas by default: faults that take the leader away lose no admission and duplicate nothing
  The chart's defaults run two replicas: both serve admission and conversion (Ready once their webhook server
  serves), one leads and reconciles (leader election), a PodDisruptionBudget keeps one through a drain, and
  they are spread across nodes. Each scenario takes a replica away under the same load: 100 small graphs
  created or updated one after another, as a GitOps tool would (a refused write is retried, and counted), and a
  client dry-running a graph through admission every 100 ms. Each counts refused admissions (the client's and
  the graph writes'), duplicate, missing and orphaned children, and the time from each fault that hit the
  leader to the next reconcile in the operator pods' logs (from a deleted leader's drain's end: it reconciles
  on through its drain); and it matches every write of the operator's
  ServiceAccount in the API server's audit log with the election Lease's holder at that moment (each
  replica's user agent carries its election identity): a replica that does not lead writes nothing (a lapsed
  leader's writes are fenced off, and only the leader writes the serving certificate and its CA bundles).
  Where no graph's pods are disrupted, no graph's Ready condition may change at a generation it was Ready at:
  a fail-over leaves the status as it was.

  A deleted replica (kubectl delete pod, an eviction, a drain, an upgrade's rollout: SIGTERM) fails its
  readiness at once and answers admissions for its drain (webhook.drainSeconds) while its endpoint leaves the
  webhook Service, then releases the Lease and stops: not one admission may be refused. A replica that dies
  without a word (SIGKILL, a lost node) is still one of the Service's endpoints until its death is seen (its
  kubelet says so at once; a lost node's pod waits for the node lifecycle controller), and the API server
  does not retry a webhook call a dead endpoint failed: those refusals are the cluster's, measured as figures
  (how many, and how long after the fault the last one came).

  A fault hits a healthy pair, one at a time: it waits until both replicas are Ready and a live process holds
  the Lease and has reconciled since the last fault (a killed leader's is taken over first), as two replicas
  mask one failure at a time. A lost node takes the operator's process with it (sim/faults node-loss) and
  stays lost, so node loss comes last. The scenarios share one simulator and release, each continuing on the
  graphs the one before left (a failed one stops the chain, and the next says so); the random moments come
  from a seed each prints (DYNAMO_FAULT_SEED replays it).

  Scenario: Operator replicas deleted 10 times at random moments while 100 graphs are created and updated
    Given a simulated cluster with no operator
    And I install the working tree cluster-wide as chart/README.md says
    And the cluster-wide release runs 2 Ready operator replicas on different nodes, one leading
    And a small graph "reference" is Ready in the namespace "ha-reference" as the reference
    And a client dry-runs a graph through admission every 100 ms
    And the Ready condition of every graph in the namespace "ha" is recorded
    When I create 100 small graphs in the namespace "ha" while an operator replica is deleted 5 times at random moments
    And I update 100 small graphs in the namespace "ha" while an operator replica is deleted 5 times at random moments
    Then all 100 graphs in the namespace "ha" become Ready
    And after each fault a leader reconciled within 15 seconds
    And no operator replica wrote while another led
    And each graph in the namespace "ha" has exactly the children of the reference graph
    And no object in the namespace "ha" is orphaned
    And no graph left Ready at a generation it was Ready at
    And not one dry-run admission failed
    And not one graph write was refused
    And the simulator is kept for the next scenario

  Scenario: Operator replicas SIGKILLed while the graphs are updated (refusals measured)
    Given the simulator the previous scenario kept
    And a small graph "reference" is Ready in the namespace "ha-reference" as the reference
    And a client dry-runs a graph through admission every 100 ms
    And the Ready condition of every graph in the namespace "ha" is recorded
    When I update 100 small graphs in the namespace "ha" while an operator replica is killed 3 times at random moments
    Then all 100 graphs in the namespace "ha" become Ready
    And after each fault a leader reconciled within 15 seconds
    And no operator replica wrote while another led
    And each graph in the namespace "ha" has exactly the children of the reference graph
    And no object in the namespace "ha" is orphaned
    And no graph left Ready at a generation it was Ready at
    And the refused admissions are counted with how long after a fault each came
    And the simulator is kept for the next scenario

  Scenario: The leader's node drained (kubectl drain) while the graphs are updated
    Given the simulator the previous scenario kept
    And a small graph "reference" is Ready in the namespace "ha-reference" as the reference
    And a client dry-runs a graph through admission every 100 ms
    When I update 100 small graphs in the namespace "ha" while the leader's node is drained once at a random moment
    Then the drain respected the operator's PodDisruptionBudget
    And all 100 graphs in the namespace "ha" become Ready
    And after each fault a leader reconciled within 15 seconds
    And no operator replica wrote while another led
    And each graph in the namespace "ha" has exactly the children of the reference graph
    And no object in the namespace "ha" is orphaned
    And not one dry-run admission failed
    And not one graph write was refused
    And the simulator is kept for the next scenario

  Scenario: helm upgrade rolls both replicas while the graphs are updated
    Given the simulator the previous scenario kept
    And a small graph "reference" is Ready in the namespace "ha-reference" as the reference
    And a client dry-runs a graph through admission every 100 ms
    And the Ready condition of every graph in the namespace "ha" is recorded
    When I update 100 small graphs in the namespace "ha" while the cluster-wide release is upgraded once at a random moment
    Then all 100 graphs in the namespace "ha" become Ready
    And after each fault a leader reconciled within 15 seconds
    And no operator replica wrote while another led
    And each graph in the namespace "ha" has exactly the children of the reference graph
    And no object in the namespace "ha" is orphaned
    And no graph left Ready at a generation it was Ready at
    And not one dry-run admission failed
    And not one graph write was refused
    And the simulator is kept for the next scenario

  Scenario: The leader's node lost while the graphs are updated
    Given the simulator the previous scenario kept
    And a small graph "reference" is Ready in the namespace "ha-reference" as the reference
    And a client dry-runs a graph through admission every 100 ms
    When I update 100 small graphs in the namespace "ha" while the leader's node is lost once at a random moment
    Then all 100 graphs in the namespace "ha" become Ready
    And after each fault a leader reconciled within 15 seconds plus the node's NotReady detection
    And no operator replica wrote while another led
    And each graph in the namespace "ha" has exactly the children of the reference graph
    And no object in the namespace "ha" is orphaned
    And the refused admissions are counted with how long after a fault each came
