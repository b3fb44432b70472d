-- Argo CD health of a DynamoComponentDeployment (nvidia.com, v1alpha1 and
-- v1beta1: both carry the same status.observedGeneration and
-- status.conditions; only the replica counts moved, which the conditions'
-- messages repeat). Argo CD runs it without Lua's string library.
--
-- Progressing: the operator has not yet reported on the current spec, or
--   the rollout is under way or waits for the cluster (pods starting, a
--   model loading, a pod the scheduler cannot place yet, a claim not bound).
-- Degraded: Stalled True (an invalid spec, a missing API, a rollout past
--   its progress deadline), or a pod that fails now, as Argo CD reads a Pod:
--   a crash loop, an image that cannot be pulled, a container that cannot
--   be created (a missing Secret or ConfigMap), a ReplicaSet that cannot
--   create pods.
-- Healthy: Ready True, every replica updated and available.
local hs = {}
local status = obj.status or {}
local generation = obj.metadata.generation or 0

-- Reasons of Ready False that a pod's failure, not the cluster's pace, sets.
local failing = {
  CrashLoopBackOff = true,
  ImagePullFailed = true,
  CreateContainerConfigError = true,
  ReplicaFailure = true,
}

-- The condition of this kind, when it describes the current spec.
local function condition(kind)
  for _, c in ipairs(status.conditions or {}) do
    if c.type == kind and (c.observedGeneration or generation) >= generation then
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
-- Ready mirrors Available; Dynamo's own operator writes only Available.
local ready = condition("Ready") or condition("Available")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report on generation " .. generation
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
elseif failing[ready.reason] then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
hs.message = ready.message or ready.reason
return hs
