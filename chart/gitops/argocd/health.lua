-- Argo CD health of dynamo-operator's kinds: one script for all of
-- DynamoGraphDeployment, DynamoComponentDeployment, DynamoModel and
-- DynamoComponent (group nvidia.com), under each kind's key of argocd-cm.
-- It reads only status.observedGeneration, status.conditions and a graph's
-- status.state, which v1alpha1 and v1beta1 carry alike. Argo CD runs it
-- without Lua's string library.
--
-- Progressing: the operator has not yet reported on the current spec, or
--   the object waits: a rollout under way or waiting for the cluster (pods
--   starting, a model loading, a pod the scheduler cannot place yet), a
--   graph waiting for its components, an image being built, a model with no
--   endpoint yet or still loading.
-- Degraded: Stalled True (an invalid spec, a missing API, a rollout past
--   its progress deadline, a failed image build), a graph in state failed,
--   or something failing now: a component's pod, as Argo CD reads the Pod
--   itself (crash loop, image pull, a container that cannot be created, a
--   ReplicaSet that cannot create pods), a worker refusing a model.
-- Healthy: Ready True.
local hs = {}
local status = obj.status or {}
local generation = obj.metadata.generation or 0

-- Per kind: the condition Dynamo's own operator writes where this one's
-- Ready mirrors it, and the reasons of Ready False that mean a failure now
-- rather than a wait.
local kinds = {
  DynamoGraphDeployment = { failing = {} },
  DynamoComponentDeployment = {
    fallback = "Available",
    failing = {
      CrashLoopBackOff = true,
      ImagePullFailed = true,
      CreateContainerConfigError = true,
      ReplicaFailure = true,
    },
  },
  DynamoModel = { failing = { LoadFailed = true } },
  DynamoComponent = { fallback = "ImageReady", failing = {} },
}
local kind = kinds[obj.kind] or { failing = {} }

-- The condition of type wanted, when it describes the current spec.
local function condition(wanted)
  for _, c in ipairs(status.conditions or {}) do
    if c.type == wanted and (c.observedGeneration or generation) >= generation then
      return c
    end
  end
  return nil
end

if (status.observedGeneration or 0) < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end
local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message or stalled.reason
  return hs
end
local ready = condition("Ready")
if ready == nil and kind.fallback ~= nil then
  ready = condition(kind.fallback)
end
if status.state == "failed" then
  hs.status = "Degraded"
  hs.message = (ready ~= nil and ready.message) or "The graph failed"
  return hs
end
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report on generation " .. generation
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
elseif kind.failing[ready.reason] then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
hs.message = ready.message or ready.reason
return hs
