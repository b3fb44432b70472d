@downgrade
Feature: Downgrading the operator restarts no workload
  helm upgrade from the working tree (N+1) back to the previous release (N), with every users' graph running:
  the same checks as the upgrade. No schema change between N and N+1 forbids it (crd.feature's tripwire fails
  when N+1 adds a field, and this scenario must then say whether N can still serve what N+1 stored).
  v0.1.0 re-applies every child whose content it keeps with only a new last-applied-hash annotation, which
  bumps each Deployment's generation: graphs turn Pending for a moment until the Deployment controller observes
  it (no pod restarts). The working tree fixes this (apply.ApplyKept); while the previous release is v0.1.0 the
  downgrade checks that every graph is Ready again rather than Ready throughout, and reports how often it was not.
  Measured: 352 not-Ready sightings, and 6 of 36 graphs still Pending ("the Deployment has not yet observed the
  current spec") 5 minutes later: v0.1.0 does not re-evaluate a graph when its Deployment only catches up on an
  annotation-bumped generation. Tagged @known-bug (left out of make scenarios) until the previous release is one
  that has ApplyKept (the checks after that step were not reached in that run).

  @known-bug
  Scenario: helm upgrade from the working tree back to the previous release restarts no pod and loses nothing
    Given a simulated cluster with no operator
    And I install the working tree cluster-wide as the seeds say
    When I apply every compat graph the simulator can run
    Then every graph becomes Ready
    And I note every graph's pods and objects
    And a client dry-runs a graph through admission every 100 ms
    And a watcher checks every graph is Ready every 250 ms
    When I upgrade the cluster-wide release to the previous release
    Then the cluster-wide release runs the previous release as its leader
    And the CRDs served are those of the previous release
    And the running operator has reconciled every graph
    And every graph seen not Ready meanwhile is Ready again
    And not one dry-run admission failed
    And no pod of any graph restarted or was replaced
    And every graph's objects are unchanged
    And every Deployment of the graphs is still the rendering of the working tree
