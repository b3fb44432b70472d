@engine
Feature: Engine features and the endpoint picker render as Dynamo's operator renders them
  A worker with gpuMemoryService claims its GPUs through a ResourceClaimTemplate <component>-gpu, shared by
  every container of its pods, beside the GPU memory service's sidecar gms-weights; with failover too (vLLM),
  its main container becomes an active and a standby engine, engine-0 and engine-1. An epp component with
  eppConfig runs Dynamo's configured endpoint picker, its configuration in a ConfigMap <graph>-epp-config
  (whose digest on the picker's pod template rolls it when the configuration changes), picking for the
  InferencePool <graph>-pool the graph owns when the cluster serves the inference extension's API, else the
  graph says so. A component whose ingress sets useVirtualService with a gateway is exposed through an Istio
  VirtualService when the cluster serves Istio's API, else through its Ingress, and says so. What the
  operator leaves to the cluster (the DRA driver that shares the GPUs, the Gateway routing to the picker's
  pool) is named in the graph's FieldsNotActedOn condition.

  # The simulator publishes its NVIDIA GPUs through NVIDIA's DRA driver (sim/README.md): the claim is allocated.
  Scenario: A failover graph of Dynamo's examples gets two engines sharing its GPUs through the GPU memory service
    When I apply the file "../shared/compat/examples/backends/vllm/deploy/agg_failover.yaml"
    Then it is accepted
    And the ResourceClaimTemplate "vllm-agg-failover-vllmworker-gpu" eventually exists
    And the ResourceClaimTemplate "vllm-agg-failover-vllmworker-gpu" has ".spec.spec.devices.requests[0].exactly.count" equal to "2"
    And the ResourceClaimTemplate "vllm-agg-failover-vllmworker-gpu" has ".spec.spec.devices.requests[0].exactly.deviceClassName" equal to "gpu.nvidia.com"
    And the Deployment "vllm-agg-failover-vllmworker" eventually has ".spec.template.spec.containers[*].name" equal to "engine-0 engine-1"
    And the Deployment "vllm-agg-failover-vllmworker" has ".spec.template.spec.initContainers[0].name" equal to "gms-weights"
    And the Deployment "vllm-agg-failover-vllmworker" has ".spec.template.spec.resourceClaims[0].resourceClaimTemplateName" equal to "vllm-agg-failover-vllmworker-gpu"
    And the Deployment "vllm-agg-failover-vllmworker" has ".spec.template.spec.containers[?(@.name=="engine-1")].env[?(@.name=="DYN_SYSTEM_PORT")].value" equal to "9091"
    And the Deployment "vllm-agg-failover-vllmworker" has ".spec.template.spec.containers[?(@.name=="engine-0")].resources.claims[0].name" equal to "shared-gpu"
    And the dgd "vllm-agg-failover" eventually has ".status.conditions[?(@.type=="FieldsNotActedOn")].message" equal to "accepted but not acted on: spec.services.VllmWorker.gpuMemoryService (rendered: ResourceClaimTemplate vllm-agg-failover-vllmworker-gpu of DeviceClass gpu.nvidia.com, sidecar gms-weights; sharing the GPUs needs a DRA driver serving that DeviceClass, which the operator does not check)"
    When I patch the dgd "vllm-agg-failover" with:
      """
      spec:
        services:
          VllmWorker:
            gpuMemoryService:
              enabled: false
      """
    Then the ResourceClaimTemplate "vllm-agg-failover-vllmworker-gpu" is eventually gone
    And the Deployment "vllm-agg-failover-vllmworker" eventually has ".spec.template.spec.containers[*].name" equal to "main"
    And the dgd "vllm-agg-failover" eventually has ".status.conditions[?(@.type=="FieldsNotActedOn")].message" containing "spec.services.VllmWorker.failover (not rendered: the standby engine shares the active one's GPUs through the GPU memory service: enable gpuMemoryService too)"

  # The scenario before the one that installs the inference extension's API: an operator that found an API keeps it.
  Scenario: The endpoint picker of Dynamo's inference gateway example reads its configuration from a ConfigMap
    When I apply the file "../shared/compat/examples/backends/vllm/deploy/gaie/agg.yaml"
    Then it is accepted
    And the ConfigMap "qwen-epp-config" eventually has ".data.epp-config-dynamo\.yaml" containing "kind: EndpointPickerConfig"
    And the ConfigMap "qwen-epp-config" has ".data.epp-config-dynamo\.yaml" containing "type: dyn-decode-scorer"
    And the Deployment "qwen-epp" eventually has ".spec.template.spec.volumes[?(@.name=="epp-config")].configMap.name" equal to "qwen-epp-config"
    And the Deployment "qwen-epp" has ".spec.template.spec.containers[0].args[1]" equal to "qwen-pool"
    And the Deployment "qwen-epp" has ".spec.template.spec.containers[0].readinessProbe.grpc.port" equal to "9003"
    And the Service "qwen-epp" eventually has ".spec.ports[?(@.name=="grpc")].port" equal to "9002"
    And the dgd "qwen" eventually has ".status.conditions[?(@.type=="FieldsNotActedOn")].message" containing "picks for the InferencePool qwen-pool, which the graph's InferencePool condition reports; the Gateway routing to the pool is not created by the operator"
    And the dgd "qwen" eventually has ".status.conditions[?(@.type=="InferencePool")].reason" equal to "APINotServed"
    And the dgd "qwen" has ".status.conditions[?(@.type=="InferencePool")].message" containing "the cluster serves no inference.networking.k8s.io/v1 InferencePool API, so the InferencePool qwen-pool the endpoint picker qwen-epp picks for is not created"
    And the Deployment "qwen-epp" has ".spec.template.metadata.annotations.nvidia\.com/epp-config-hash" equal to "e71cdfc7f20a97d4"
    When I patch the dgd "qwen" with:
      """
      spec:
        services:
          Epp:
            eppConfig:
              config: null
              configMapRef:
                name: my-picker
                key: picker.yaml
      """
    Then the ConfigMap "qwen-epp-config" is eventually gone
    And the Deployment "qwen-epp" eventually has ".spec.template.spec.volumes[?(@.name=="epp-config")].configMap.name" equal to "my-picker"

  # The scenario before the one that installs Istio's API: an operator that found an API keeps it.
  Scenario: Without Istio's API a component that asks for a VirtualService keeps its Ingress and says why
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: routed
      spec:
        services:
          Frontend:
            componentType: frontend
            replicas: 1
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
            ingress:
              enabled: true
              host: routed.example.com
              useVirtualService: true
              virtualServiceGateway: istio-system/ingressgateway
      """
    Then it is accepted
    And the Ingress "routed-frontend" eventually exists
    And the dcd "routed-frontend" eventually has ".status.conditions[?(@.type=="VirtualService")].reason" equal to "APINotServed"
    And the dcd "routed-frontend" has ".status.conditions[?(@.type=="VirtualService")].message" containing "the Ingress routed-frontend serves instead"
    And the dgd "routed" has ".status.conditions[?(@.type=="FieldsNotActedOn")].status" equal to ""

  Scenario: With Istio's API a component that asks for a VirtualService is exposed through it, instead of an Ingress
    Given the cluster serves Istio's VirtualService API
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: routed
      spec:
        services:
          Frontend:
            componentType: frontend
            replicas: 1
            extraPodSpec:
              mainContainer:
                image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1
            ingress:
              enabled: true
              host: routed.example.com
              useVirtualService: true
              virtualServiceGateway: istio-system/ingressgateway
      """
    Then it is accepted
    And within a minute the dcd "routed-frontend" is exposed through its VirtualService
    And the virtualservices.networking.istio.io "routed-frontend" eventually has ".spec.gateways[0]" equal to "istio-system/ingressgateway"
    And the virtualservices.networking.istio.io "routed-frontend" has ".spec.hosts[0]" equal to "routed.example.com"
    And the virtualservices.networking.istio.io "routed-frontend" has ".spec.http[0].route[0].destination.host" equal to "routed-frontend"
    And the virtualservices.networking.istio.io "routed-frontend" has ".spec.http[0].route[0].destination.port.number" equal to "8000"
    And the Ingress "routed-frontend" is eventually gone
    When I patch the dgd "routed" with:
      """
      spec:
        services:
          Frontend:
            ingress:
              useVirtualService: false
      """
    Then the virtualservices.networking.istio.io "routed-frontend" is eventually gone
    And the Ingress "routed-frontend" eventually exists
    And the dcd "routed-frontend" eventually has ".status.conditions[?(@.type=="VirtualService")].status" equal to ""

  Scenario: With the inference extension's API the graph owns its picker's InferencePool, and a new configuration rolls the picker
    Given the cluster serves the inference extension's InferencePool API
    When I apply the file "../shared/compat/examples/backends/vllm/deploy/gaie/agg.yaml"
    Then it is accepted
    And within a minute the dgd "qwen" has its InferencePool
    And the inferencepools.inference.networking.k8s.io "qwen-pool" eventually has ".spec.endpointPickerRef.name" equal to "qwen-epp"
    And the inferencepools.inference.networking.k8s.io "qwen-pool" has ".spec.endpointPickerRef.port.number" equal to "9002"
    And the inferencepools.inference.networking.k8s.io "qwen-pool" has ".spec.targetPorts[*].number" equal to "8000"
    And the inferencepools.inference.networking.k8s.io "qwen-pool" has ".spec.selector.matchLabels.nvidia\.com/dynamo-component-type" equal to "worker"
    And the inferencepools.inference.networking.k8s.io "qwen-pool" has ".metadata.ownerReferences[?(@.controller==true)].name" equal to "qwen"
    And the dgd "qwen" has ".status.conditions[?(@.type=="InferencePool")].message" equal to "the InferencePool qwen-pool selects the graph's workers, picked by the endpoint picker qwen-epp"
    And the Deployment "qwen-epp" eventually has ".spec.template.metadata.annotations.nvidia\.com/epp-config-hash" equal to "e71cdfc7f20a97d4"
    When I patch the dgd "qwen" with:
      """
      spec:
        services:
          Epp:
            eppConfig:
              config:
                plugins:
                  - type: disagg-profile-handler
                  - name: picker
                    type: max-score-picker
                  - name: dyn-decode
                    type: dyn-decode-scorer
                schedulingProfiles:
                  - name: decode
                    plugins:
                      - pluginRef: dyn-decode
                        weight: 2
                      - pluginRef: picker
                        weight: 1
      """
    Then the ConfigMap "qwen-epp-config" eventually has ".data.epp-config-dynamo\.yaml" containing "weight: 2"
    And the Deployment "qwen-epp" eventually has ".spec.template.metadata.annotations.nvidia\.com/epp-config-hash" equal to "da5a6d59e808379a"
    When I patch the dgd "qwen" with:
      """
      spec:
        services:
          Epp: null
      """
    Then the inferencepools.inference.networking.k8s.io "qwen-pool" is eventually gone
    And the dgd "qwen" eventually has ".status.conditions[?(@.type=="InferencePool")].status" equal to ""
