@crd
Feature: CRD schema upgrade keeps every stored object
  Objects stored under the previous release's CRDs read, validate and reconcile under the working tree's: the
  new CRDs are served, every stored field reads back as the user wrote it, every stored graph and component
  passes the new schema and webhooks unchanged, and the new operator reconciles them. A field new in the working
  tree's schema must be set here on objects stored under the old one: the tripwire step names such fields.

  Scenario: objects stored under the previous release's CRDs live on under the working tree's
    Given a simulated cluster with no operator
    And I install the previous release cluster-wide as the seeds say
    When I apply every compat graph the simulator can run
    Then every graph becomes Ready
    And the CRDs served are those of the previous release
    And I note every graph's pods and objects
    When I upgrade the cluster-wide release to the working tree
    Then the cluster-wide release runs the working tree as its leader
    And the CRDs served are those of the working tree
    And the CRDs of the working tree add no field to those of the previous release
    And every compat object reads back as it was applied
    And every graph and component passes the served validation as stored
    And the running operator has reconciled every graph
    And every graph's objects are unchanged
    And no pod of any graph restarted or was replaced
