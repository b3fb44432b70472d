-- Argo CD health of a DynamoGraphDeployment (nvidia.com, v1alpha1 and
-- v1beta1: both carry the same status.observedGeneration, status.state and
-- status.conditions). Argo CD runs it without Lua's string library.
--
-- Progressing: the operator has not yet reported on the current spec (no
--   status, state initializing, an older observedGeneration), or the graph
--   waits for its components (Ready False, state pending; its message names
--   each component and why, e.g. a pod that crash-loops).
-- Degraded: the graph cannot progress without a change: Stalled True (a
--   component past its Deployment's progress deadline, an invalid spec) or
--   state failed (a component's spec to fix, an image that cannot be built).
-- Healthy: Ready True, every component available for the current spec.
local hs = {}
local status = obj.status or {}
local generation = obj.metadata.generation or 0

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
local ready = condition("Ready")
local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message or stalled.reason
  return hs
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
else
  hs.status = "Progressing"
end
hs.message = ready.message or ready.reason
return hs
