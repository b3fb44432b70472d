@sim-only
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
