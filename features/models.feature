@models @fake-workers
Feature: LoRA adapters on every serving worker
  A DynamoModel of type lora names a base model. The operator loads its adapter through Dynamo's
  runtime API (POST /v1/loras on the system port 9090) on every Ready pod of the services whose
  modelRef names that base model, checks at an interval that each worker still has it (GET
  /v1/loras), loads it again at once on a worker that restarted, reports the endpoints in the
  model's status, and unloads it from every worker (DELETE /v1/loras/<name>) when the model is
  deleted. The workers here are fake Dynamo runtimes that record every call: in process on
  envtest, the simulator's own on the simulator, each pod's own process on kind (the fake runtime image).

  Background:
    Given fake Dynamo workers serve the pods of this namespace
    And I apply the file "../shared/compat/examples/backends/vllm/deploy/lora/agg_lora.yaml"

  Scenario: The compat LoRA example loads on every worker, and a new worker gets it too
    When I apply the file "../shared/compat/examples/backends/vllm/deploy/lora/lora-model.yaml"
    Then the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    And the dm "codelion-recovery-lora" eventually has ".status.conditions[?(@.type=="Ready")].status" equal to "True"
    And the dm "codelion-recovery-lora" has ".status.readyEndpoints" equal to "1"
    And the dm "codelion-recovery-lora" has ".status.conditions[?(@.type=="Ready")].reason" equal to "Loaded"
    And the dm "codelion-recovery-lora" has ".metadata.finalizers[0]" equal to "nvidia.com/dynamo-model-unload"
    When I patch the dgd "vllm-agg-lora" with:
      """
      spec:
        services:
          VllmDecodeWorker:
            replicas: 3
      """
    Then the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    And the dm "codelion-recovery-lora" eventually has ".status.readyEndpoints" equal to "3"
    And the time from each pod of the dcd "vllm-agg-lora-vllmdecodeworker" turning Ready to its adapter loaded is reported
    And the dm "codelion-recovery-lora" has ".status.totalEndpoints" equal to "3"
    And the dm "codelion-recovery-lora" has ".status.endpoints[0].address" containing ":9090"
    And the dm "codelion-recovery-lora" has ".status.conditions[?(@.type=="Ready")].observedGeneration" equal to "1"

  Scenario: A restarted worker gets the adapter again at once, one that lost it at the next check
    When I apply the file "../shared/compat/examples/backends/vllm/deploy/lora/lora-model.yaml"
    Then the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    When the first pod of the dcd "vllm-agg-lora-vllmdecodeworker" restarts
    Then the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    And the first pod of the dcd "vllm-agg-lora-vllmdecodeworker" has received a POST to "/v1/loras" since it restarted
    When the worker of the first pod of the dcd "vllm-agg-lora-vllmdecodeworker" forgets its adapters
    Then the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    And the dm "codelion-recovery-lora" eventually has ".status.conditions[?(@.type=="Ready")].status" equal to "True"

  Scenario: In steady state the operator only checks the workers, at its interval
    When I apply the file "../shared/compat/examples/backends/vllm/deploy/lora/lora-model.yaml"
    Then the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    And the dm "codelion-recovery-lora" eventually has ".status.conditions[?(@.type=="Ready")].status" equal to "True"
    And the dgd "vllm-agg-lora" eventually has ".status.conditions[?(@.type=="Ready")].status" equal to "True"
    And over 3 check intervals the pods of the dcd "vllm-agg-lora-vllmdecodeworker" receive only "GET /v1/loras" calls, about one per interval, and the operator writes nothing in this namespace

  # @sim-control: the simulator's fake workers fail loads on their pod's annotation; a pod's own runtime
  # on kind cannot read it.
  @sim-control
  Scenario: A worker that fails loads is retried and reported while the others load
    Given the first pod of the dcd "vllm-agg-lora-vllmdecodeworker" fails LoRA loads
    When I patch the dgd "vllm-agg-lora" with:
      """
      spec:
        services:
          VllmDecodeWorker:
            replicas: 2
      """
    And I apply the file "../shared/compat/examples/backends/vllm/deploy/lora/lora-model.yaml"
    Then the dm "codelion-recovery-lora" eventually reports the first pod of the dcd "vllm-agg-lora-vllmdecodeworker" failing
    And the dm "codelion-recovery-lora" eventually has ".status.readyEndpoints" equal to "1"
    And the dm "codelion-recovery-lora" has ".status.totalEndpoints" equal to "2"
    And the first pod of the dcd "vllm-agg-lora-vllmdecodeworker" eventually has received 3 POST calls to "/v1/loras"
    When the first pod of the dcd "vllm-agg-lora-vllmdecodeworker" loads LoRAs again
    Then the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    And the dm "codelion-recovery-lora" eventually has ".status.conditions[?(@.type=="Ready")].status" equal to "True"

  Scenario: Deleting the model unloads the adapter from every worker
    When I patch the dgd "vllm-agg-lora" with:
      """
      spec:
        services:
          VllmDecodeWorker:
            replicas: 2
      """
    And I apply the file "../shared/compat/examples/backends/vllm/deploy/lora/lora-model.yaml"
    Then the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    When I delete the dm "codelion-recovery-lora" with background propagation
    Then the dm "codelion-recovery-lora" is eventually gone
    And the adapter "codelion/Qwen3-0.6B-accuracy-recovery-lora" is eventually loaded on no pod of the dcd "vllm-agg-lora-vllmdecodeworker"
    And every Ready pod of the dcd "vllm-agg-lora-vllmdecodeworker" has received a DELETE of "/v1/loras/codelion/Qwen3-0.6B-accuracy-recovery-lora"

  Scenario: A base model's endpoints are discovered and reported, nothing is called
    When I apply manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoModel
      metadata:
        name: qwen-base
      spec:
        modelName: Qwen/Qwen3-0.6B
        baseModelName: Qwen/Qwen3-0.6B
        modelType: base
      """
    Then the dm "qwen-base" eventually has ".status.totalEndpoints" equal to "1"
    And the dm "qwen-base" has ".status.readyEndpoints" equal to "1"
    And the dm "qwen-base" has ".status.conditions[?(@.type=="Ready")].reason" equal to "EndpointsDiscovered"
    And no pod of the dcd "vllm-agg-lora-vllmdecodeworker" receives a LoRA call within 5 seconds
