@components
Feature: A graph's dynamoComponent is built into an image by a Job, and its components run that image
  The older build flow: a graph names an artifact (name:version) in spec.dynamoComponent. The operator creates
  the DynamoComponent for it, or reuses the one that exists; without spec.image a Job builds and pushes the
  image, and its result becomes the DynamoComponent's status. The graph's components wait for the image (the
  graph says so), then run it. A new tag rolls the graph only once the new image is built, the old pods
  serving meanwhile. On envtest the steps write the build Job's outcome; on the simulator the real Job
  controller does, from builder pods the simulator completes, fails or leaves hanging (@sim-kubelet: a
  real kubelet, kind's, needs the builder's image and a registry to push the built image to and pull it
  from).

  @sim-kubelet
  Scenario: A build Job completes and the graph runs the built image
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        dynamoComponent: frontend:jh2o6dqzpsgfued4
        services:
          Frontend:
            componentType: frontend
            replicas: 1
      """
    Then it is accepted
    And the dc "frontend--jh2o6dqzpsgfued4" eventually exists
    And the dc "frontend--jh2o6dqzpsgfued4" has ".metadata.ownerReferences[0].name" equal to "llm"
    And the dc "frontend--jh2o6dqzpsgfued4" has ".spec.dynamoComponent" equal to "frontend:jh2o6dqzpsgfued4"
    And the build Job of DynamoComponent "frontend--jh2o6dqzpsgfued4" has ".spec.template.spec.containers[0].command[0]" equal to "buildctl-daemonless.sh"
    And the build Job of DynamoComponent "frontend--jh2o6dqzpsgfued4" has ".metadata.annotations.nvidia\.com/dynamo-built-image" equal to "dynamo-components:frontend-jh2o6dqzpsgfued4"
    And the build Job of DynamoComponent "frontend--jh2o6dqzpsgfued4" has ".metadata.ownerReferences[0].name" equal to "frontend--jh2o6dqzpsgfued4"
    When the image build of DynamoComponent "frontend--jh2o6dqzpsgfued4" succeeds
    Then the dc "frontend--jh2o6dqzpsgfued4" eventually has ".status.conditions[?(@.type=="ImageReady")].status" equal to "True"
    And the dc "frontend--jh2o6dqzpsgfued4" has ".status.conditions[?(@.type=="ImageReady")].reason" equal to "ImageBuilt"
    And the dc "frontend--jh2o6dqzpsgfued4" has ".status.image" equal to "dynamo-components:frontend-jh2o6dqzpsgfued4"
    And the dc "frontend--jh2o6dqzpsgfued4" has ".status.observedGeneration" equal to "1"
    And kstatus reads the dc "frontend--jh2o6dqzpsgfued4" as Current
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    And the Deployment "llm-frontend" has ".spec.template.spec.containers[?(@.name=="main")].image" equal to "dynamo-components:frontend-jh2o6dqzpsgfued4"
    And the dgd "llm" has ".status.conditions[?(@.type=="FieldsNotActedOn")].status" equal to ""
    And "kubectl get dc" shows the columns "Name, Component, Image-Ready, Age"

  Scenario: A DynamoComponent with an image builds nothing and its graph runs that image
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponent
      metadata:
        name: frontend--v1
      spec:
        dynamoComponent: frontend:v1
        image: registry.example/dynamo/frontend:v1
      ---
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        dynamoComponent: frontend:v1
        services:
          Frontend:
            componentType: frontend
            replicas: 1
      """
    Then it is accepted
    And the dc "frontend--v1" eventually has ".status.conditions[?(@.type=="ImageReady")].reason" equal to "ImageGiven"
    And the dc "frontend--v1" has ".status.image" equal to "registry.example/dynamo/frontend:v1"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    And the Deployment "llm-frontend" has ".spec.template.spec.containers[?(@.name=="main")].image" equal to "registry.example/dynamo/frontend:v1"
    # A DynamoComponent the user made is reused, not taken over: it stays when the graph goes.
    And the dc "frontend--v1" has no owner

  Scenario: A build that times out says so, and the graph waiting for it fails saying why
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponent
      metadata:
        name: slow--v1
      spec:
        dynamoComponent: slow:v1
        imageBuildTimeout: 15s
        imageBuilderExtraPodMetadata:
          annotations:
            dynamo-sim/job-outcome: hang
      ---
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        dynamoComponent: slow:v1
        services:
          Frontend:
            componentType: frontend
            replicas: 1
      """
    Then it is accepted
    And the build Job of DynamoComponent "slow--v1" has ".spec.activeDeadlineSeconds" equal to "15"
    And the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "waiting for the image of DynamoComponent slow--v1: building dynamo-components:slow-v1"
    And the dgd "llm" has ".status.state" equal to "pending"
    And the Deployment "llm-frontend" does not exist
    When the image build of DynamoComponent "slow--v1" times out
    Then the dc "slow--v1" eventually has ".status.conditions[?(@.type=="ImageReady")].reason" equal to "ImageBuildTimedOut"
    And the dc "slow--v1" has ".status.conditions[?(@.type=="ImageReady")].message" containing "did not finish within imageBuildTimeout 15s"
    And kstatus reads the dc "slow--v1" as Failed
    And the dgd "llm" eventually has ".status.state" equal to "failed"
    And the dgd "llm" has ".status.conditions[?(@.type=="Ready")].message" containing "the image of DynamoComponent slow--v1 cannot be built"

  @sim-kubelet
  Scenario: A new tag rolls the graph once its image is built, the old pods serving meanwhile
    Given I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        dynamoComponent: frontend:v1
        services:
          Frontend:
            componentType: frontend
            replicas: 1
      """
    And the image build of DynamoComponent "frontend--v1" succeeds
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    # The new version's build is held by the simulator until the step below lets it finish.
    When I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoComponent
      metadata:
        name: frontend--v2
      spec:
        dynamoComponent: frontend:v2
        imageBuilderExtraPodMetadata:
          annotations:
            dynamo-sim/job-outcome: hang
      """
    And I patch the dgd "llm" with:
      """
      spec:
        dynamoComponent: frontend:v2
      """
    Then the dgd "llm" eventually has ".status.conditions[?(@.type=="Ready")].message" containing "waiting for the image of DynamoComponent frontend--v2"
    And the Deployment "llm-frontend" has ".spec.template.spec.containers[?(@.name=="main")].image" equal to "dynamo-components:frontend-v1"
    And the Deployment "llm-frontend" has ".status.availableReplicas" equal to "1"
    And the Deployment "llm-frontend" keeps its pod template until the image build of DynamoComponent "frontend--v2" succeeds
    And the Deployment "llm-frontend" eventually has ".spec.template.spec.containers[?(@.name=="main")].image" equal to "dynamo-components:frontend-v2"
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    And the dgd "llm" has ".status.observedGeneration" equal to "2"

  # The operator's writes are counted from its audit log; a restart reconciles every object again.
  @audit @sim-kubelet
  Scenario: With its image built and the graph running, a restarted operator writes nothing
    Given I apply the manifest:
      """
      apiVersion: nvidia.com/v1alpha1
      kind: DynamoGraphDeployment
      metadata:
        name: llm
      spec:
        dynamoComponent: frontend:v1
        services:
          Frontend:
            componentType: frontend
            replicas: 1
      """
    And the image build of DynamoComponent "frontend--v1" succeeds
    And the dgd "llm" eventually has ".status.state" equal to "successful"
    When the operator restarts
    Then the operator makes no writes in this namespace within 3 seconds
