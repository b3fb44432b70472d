-- Argo CD health of a DynamoComponent (nvidia.com/v1alpha1), the image of
-- the older build flow. Argo CD runs it without Lua's string library.
--
-- Progressing: the operator has not yet reported on the current spec, or
--   the build Job runs (ImageBuilding).
-- Degraded: Stalled True: the build failed or passed its imageBuildTimeout
--   (delete the Job to retry), or the spec is invalid.
-- Healthy: Ready True: the image was given (ImageGiven) or built (ImageBuilt).
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
local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.message or stalled.reason
  return hs
end
-- Ready mirrors ImageReady, which is all Dynamo's own operator writes.
local ready = condition("Ready") or condition("ImageReady")
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
