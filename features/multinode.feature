@sim-only @lws
Feature: Multinode graphs run as groups of a leader and its workers
  A multinode service (multinode.nodeCount >= 2) runs as a LeaderWorkerSet: each replica is a group of
  nodeCount pods, a leader and its workers, made by the real LeaderWorkerSet controller the simulator
  runs. An engine forms only when every pod of its group runs, each knowing its rank and its leader's
  address; the graph is Ready only then. Replicas, status and the scale subresource count groups.

  Scenario Outline: A users' multinode graph converges, every group formed
    When I apply the file "<file>" with the Secrets and ConfigMaps its docs have users create
    Then the dgd "<graph>" becomes Ready, and the time it took is reported
    And every group of every multinode service of the dgd "<graph>" has its pods Ready on distinct nodes, each knowing its leader's address and its rank

    Examples:
      | file                                                                   | graph                    |
      | ../shared/compat/examples/backends/vllm/deploy/disagg-multinode.yaml   | vllm-disagg              |
      | ../shared/compat/examples/backends/sglang/deploy/disagg-multinode.yaml | sglang-disagg-multinode  |
      | ../shared/compat/examples/backends/trtllm/deploy/disagg-multinode.yaml | trtllm-disagg-tp8        |

  Scenario: Scaling a multinode service adds a whole group, and status counts groups
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: mn
      spec:
        backendFramework: vllm
        services:
          Worker:
            componentType: worker
            replicas: 1
            multinode:
              nodeCount: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: vllm-runtime:1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]
      """
    Then the dgd "mn" becomes Ready, and the time it took is reported
    And the dcd "mn-worker" has ".status.replicas" equal to "1"
    When I scale the dcd "mn-worker" to 2
    Then the LeaderWorkerSet "mn-worker" eventually has ".spec.replicas" equal to "2"
    And the dcd "mn-worker" eventually has ".status.readyReplicas" equal to "2"
    And the dcd "mn-worker" has ".status.replicas" equal to "2"
    And every group of every multinode service of the dgd "mn" has its pods Ready on distinct nodes, each knowing its leader's address and its rank

  Scenario: Each group is placed whole or not at all: with GPUs for one and a half groups, one runs and the other holds none
    Given 3 GPU nodes with 1 GPU each are reserved for "gang"
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: gang
      spec:
        backendFramework: vllm
        services:
          Worker:
            componentType: worker
            replicas: 2
            multinode:
              nodeCount: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              nodeSelector:
                sim.dynamo.nvidia.com/reserved: gang
              tolerations:
                - key: sim.dynamo.nvidia.com/reserved
                  operator: Equal
                  value: gang
                  effect: NoSchedule
              mainContainer:
                image: vllm-runtime:1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]
      """
    Then exactly one group of the dcd "gang-worker" runs, and the other waits without holding a GPU, its PodGroup Unschedulable
    And the dcd "gang-worker" has ".status.conditions[?(@.type=="GangScheduling")].status" equal to "True"
    When I add 1 GPU node with 1 GPU each reserved for "gang"
    Then every group of the dcd "gang-worker" is placed whole, and the time since the capacity was added is reported
    And the dgd "gang" becomes Ready, and the time it took is reported

  Scenario: Losing a worker's node restarts its whole group: the graph is pending, then Ready on the nodes left
    Given 3 GPU nodes with 1 GPU each are reserved for "loss"
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: loss
      spec:
        backendFramework: vllm
        services:
          Worker:
            componentType: worker
            replicas: 1
            multinode:
              nodeCount: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              nodeSelector:
                sim.dynamo.nvidia.com/reserved: loss
              tolerations:
                - key: sim.dynamo.nvidia.com/reserved
                  operator: Equal
                  value: loss
                  effect: NoSchedule
              mainContainer:
                image: vllm-runtime:1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]
      """
    Then the dgd "loss" becomes Ready, and the time it took is reported
    When the node of a worker of group 0 of the dcd "loss-worker" is lost, and an admin marks it out of service once it is NotReady
    Then the dgd "loss" goes pending, then Ready again with group 0 of the dcd "loss-worker" recreated away from the lost node, and the times are reported

  Scenario: A change of image replaces the groups one at a time, each new group whole before an old one goes
    Given 4 GPU nodes with 2 GPUs each are reserved for "roll"
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: roll
      spec:
        backendFramework: vllm
        services:
          Worker:
            componentType: worker
            replicas: 2
            multinode:
              nodeCount: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              nodeSelector:
                sim.dynamo.nvidia.com/reserved: roll
              tolerations:
                - key: sim.dynamo.nvidia.com/reserved
                  operator: Equal
                  value: roll
                  effect: NoSchedule
              mainContainer:
                image: vllm-runtime:1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]
      """
    Then the dgd "roll" becomes Ready, and the time it took is reported
    When I patch the dgd "roll" with the following, watching the groups of the dcd "roll-worker" until its rollout is done:
      """
      spec:
        services:
          Worker:
            extraPodSpec:
              mainContainer:
                image: vllm-runtime:2
      """
    Then the dcd "roll-worker" never had fewer than 2 whole groups Ready during the rollout, and never more than one group being replaced
    And every pod of the dcd "roll-worker" runs the image "vllm-runtime:2"
    And the dgd "roll" becomes Ready, and the time it took is reported

  @restart
  Scenario: A restart replaces the groups one at a time, their spec unchanged
    Given 4 GPU nodes with 2 GPUs each are reserved for "mnrestart"
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: mnrestart
      spec:
        backendFramework: vllm
        services:
          Worker:
            componentType: worker
            replicas: 2
            multinode:
              nodeCount: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              nodeSelector:
                sim.dynamo.nvidia.com/reserved: mnrestart
              tolerations:
                - key: sim.dynamo.nvidia.com/reserved
                  operator: Equal
                  value: mnrestart
                  effect: NoSchedule
              mainContainer:
                image: vllm-runtime:1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]
      """
    Then the dgd "mnrestart" becomes Ready, and the time it took is reported
    When I patch the dgd "mnrestart" with the following, watching the groups of the dcd "mnrestart-worker" until its rollout is done:
      """
      spec:
        restart: {id: first}
      """
    Then the dcd "mnrestart-worker" never had fewer than 2 whole groups Ready during the rollout, and never more than one group being replaced
    And every pod of the dcd "mnrestart-worker" runs the image "vllm-runtime:1"
    And the dgd "mnrestart" eventually has ".status.restart.phase" equal to "Completed"
    And the LeaderWorkerSet "mnrestart-worker" has ".spec.leaderWorkerTemplate.workerTemplate.metadata.annotations.nvidia\.com/restartAt" equal to "first"

  @install
  Scenario: Without the LeaderWorkerSet API a multinode graph fails saying what to install, and runs once it is installed, the operator not restarted
    Given the cluster serves no LeaderWorkerSet API, and the operator has started without it
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: nolws
      spec:
        backendFramework: vllm
        services:
          Worker:
            componentType: worker
            replicas: 1
            multinode:
              nodeCount: 2
            resources:
              limits:
                gpu: "1"
            extraPodSpec:
              mainContainer:
                image: vllm-runtime:1
                command: ["python3", "-m", "dynamo.vllm"]
                args: ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]
      """
    Then the dgd "nolws" eventually has ".status.state" equal to "failed"
    And the dgd "nolws" has ".status.conditions[?(@.type=="Ready")].message" containing "install LeaderWorkerSet"
    And the dcd "nolws-worker" has ".status.conditions[?(@.type=="Available")].reason" equal to "MissingAPI"
    When LeaderWorkerSet's API is installed again
    Then the dgd "nolws" becomes Ready, and the time it took is reported
    And every group of every multinode service of the dgd "nolws" has its pods Ready on distinct nodes, each knowing its leader's address and its rank
    And the operator's pods have not restarted since LeaderWorkerSet's API was installed
