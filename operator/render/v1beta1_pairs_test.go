package render

// The graphs of TestV1beta1PairsRenderAlike. The v1alpha1 ones are from
// ../shared/compat (the failover and multinode ones as they are there, the
// image tag aside); the v1beta1 ones are their forms in
// ../shared/compat-v1beta1, or written as Dynamo's conversion writes them.

const pairAggAlpha = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: vllm-agg
spec:
  services:
    Frontend:
      envFromSecret: hf-token-secret
      componentType: frontend
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
    VllmDecodeWorker:
      envFromSecret: hf-token-secret
      componentType: worker
      replicas: 1
      resources:
        limits:
          gpu: "1"
        requests:
          custom:
            ephemeral-storage: "2Gi"
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          workingDir: /workspace/examples/backends/vllm
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-0.6B]
`

const pairAggBeta = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: vllm-agg
spec:
  components:
  - name: Frontend
    podTemplate:
      spec:
        containers:
        - envFrom:
          - secretRef:
              name: hf-token-secret
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          name: main
    replicas: 1
    type: frontend
  - name: VllmDecodeWorker
    podTemplate:
      spec:
        containers:
        - args: [--model, Qwen/Qwen3-0.6B]
          command: [python3, -m, dynamo.vllm]
          envFrom:
          - secretRef:
              name: hf-token-secret
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          name: main
          resources:
            limits:
              nvidia.com/gpu: "1"
            requests:
              ephemeral-storage: 2Gi
          workingDir: /workspace/examples/backends/vllm
    replicas: 1
    type: worker
`

const pairMultinodeAlpha = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: sglang-disagg-multinode
spec:
  backendFramework: sglang
  envs:
  - name: HF_TOKEN
    valueFrom:
      secretKeyRef:
        key: HF_TOKEN
        name: hf-token-secret
  - name: GLOO_SOCKET_IFNAME
    value: eth0
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1
    decode:
      envFromSecret: hf-token-secret
      componentType: worker
      subComponentType: decode
      replicas: 1
      multinode:
        nodeCount: 2
      resources:
        limits:
          gpu: "4"
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1
          workingDir: /workspace/examples/backends/sglang
          command: [python3, -m, dynamo.sglang]
          args: [--model-path, Qwen/Qwen3-0.6B, --tp-size, "8", --disaggregation-mode, decode]
    prefill:
      envFromSecret: hf-token-secret
      componentType: worker
      subComponentType: prefill
      replicas: 1
      multinode:
        nodeCount: 2
      resources:
        limits:
          gpu: "4"
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1
          workingDir: /workspace/examples/backends/sglang
          command: [python3, -m, dynamo.sglang]
          args: [--model-path, Qwen/Qwen3-0.6B, --tp-size, "8", --disaggregation-mode, prefill]
`

const pairMultinodeBeta = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: sglang-disagg-multinode
spec:
  backendFramework: sglang
  components:
  - name: Frontend
    podTemplate:
      spec:
        containers:
        - image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1
          name: main
    replicas: 1
    type: frontend
  - multinode:
      nodeCount: 2
    name: decode
    podTemplate:
      spec:
        containers:
        - args: [--model-path, Qwen/Qwen3-0.6B, --tp-size, "8", --disaggregation-mode, decode]
          command: [python3, -m, dynamo.sglang]
          envFrom:
          - secretRef:
              name: hf-token-secret
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1
          name: main
          resources:
            limits:
              nvidia.com/gpu: "4"
          workingDir: /workspace/examples/backends/sglang
    replicas: 1
    type: decode
  - multinode:
      nodeCount: 2
    name: prefill
    podTemplate:
      spec:
        containers:
        - args: [--model-path, Qwen/Qwen3-0.6B, --tp-size, "8", --disaggregation-mode, prefill]
          command: [python3, -m, dynamo.sglang]
          envFrom:
          - secretRef:
              name: hf-token-secret
          image: nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.1
          name: main
          resources:
            limits:
              nvidia.com/gpu: "4"
          workingDir: /workspace/examples/backends/sglang
    replicas: 1
    type: prefill
  env:
  - name: HF_TOKEN
    valueFrom:
      secretKeyRef:
        key: HF_TOKEN
        name: hf-token-secret
  - name: GLOO_SOCKET_IFNAME
    value: eth0
`

const pairFailoverAlpha = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: vllm-agg-failover
  annotations:
    nvidia.com/dynamo-kube-discovery-mode: container
spec:
  services:
    Frontend:
      envFromSecret: hf-token-secret
      componentType: frontend
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
    VllmWorker:
      envFromSecret: hf-token-secret
      componentType: worker
      replicas: 1
      resources:
        limits:
          gpu: "2"
        requests:
          custom:
            ephemeral-storage: "2Gi"
      gpuMemoryService:
        enabled: true
      failover:
        enabled: true
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          workingDir: /workspace/examples/backends/vllm
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-0.6B, --tensor-parallel-size, "2", --load-format, gms]
`

const pairFailoverBeta = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  annotations:
    nvidia.com/dynamo-kube-discovery-mode: container
  name: vllm-agg-failover
spec:
  components:
  - name: Frontend
    podTemplate:
      spec:
        containers:
        - envFrom:
          - secretRef:
              name: hf-token-secret
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          name: main
    replicas: 1
    type: frontend
  - experimental:
      failover: {}
      gpuMemoryService: {}
    name: VllmWorker
    podTemplate:
      spec:
        containers:
        - args: [--model, Qwen/Qwen3-0.6B, --tensor-parallel-size, "2", --load-format, gms]
          command: [python3, -m, dynamo.vllm]
          envFrom:
          - secretRef:
              name: hf-token-secret
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          name: main
          resources:
            limits:
              nvidia.com/gpu: "2"
            requests:
              ephemeral-storage: 2Gi
          workingDir: /workspace/examples/backends/vllm
    replicas: 1
    type: worker
`

const pairServiceFieldsAlpha = `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: vllm-fields
spec:
  pvcs:
  - name: compilation-cache
  services:
    Frontend:
      componentType: frontend
      replicas: 2
      envs:
      - name: DYN_ROUTER_MODE
        value: kv
      readinessProbe:
        initialDelaySeconds: 30
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
    VllmWorker:
      componentType: worker
      replicas: 1
      envs:
      - name: HF_HOME
        value: /cache
      livenessProbe:
        httpGet:
          path: /live
          port: 9090
      sharedMemory:
        size: 16Gi
      volumeMounts:
      - name: compilation-cache
        mountPoint: /root/.cache/vllm
        useAsCompilationCache: true
      resources:
        requests:
          cpu: "8"
          memory: 64Gi
        limits:
          gpu: "2"
          gpuType: nvidia.com/mig-3g.40gb
      frontendSidecar:
        image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
        args: [--router-mode, kv]
        envFromSecret: hf-token-secret
      extraPodMetadata:
        labels:
          team: inference
      extraPodSpec:
        nodeSelector:
          gpu: h100
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          command: [python3, -m, dynamo.vllm]
`

const pairServiceFieldsBeta = `
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: vllm-fields
spec:
  components:
  - name: Frontend
    type: frontend
    replicas: 2
    podTemplate:
      spec:
        containers:
        - name: main
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          env:
          - name: DYN_ROUTER_MODE
            value: kv
          readinessProbe:
            initialDelaySeconds: 30
  - name: VllmWorker
    type: worker
    replicas: 1
    sharedMemorySize: 16Gi
    compilationCache:
      pvcName: compilation-cache
      mountPath: /root/.cache/vllm
    frontendSidecar: frontend-sidecar
    podTemplate:
      metadata:
        labels:
          team: inference
      spec:
        nodeSelector:
          gpu: h100
        containers:
        - name: main
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          command: [python3, -m, dynamo.vllm]
          env:
          - name: HF_HOME
            value: /cache
          livenessProbe:
            httpGet:
              path: /live
              port: 9090
          resources:
            requests:
              cpu: "8"
              memory: 64Gi
            limits:
              nvidia.com/mig-3g.40gb: "2"
        - name: frontend-sidecar
          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1
          args: [--router-mode, kv]
          envFrom:
          - secretRef:
              name: hf-token-secret
`
