-- Argo CD health of a DynamoModel (nvidia.com/v1alpha1). Argo CD runs it
-- without Lua's string library.
--
-- Progressing: the operator has not yet reported on the current spec, no
--   Ready pod serves the base model yet (NoEndpoints), or the adapter is
--   still being loaded (Loading).
-- Degraded: a worker refuses to load the adapter (LoadFailed, naming each
--   pod and its error; the operator keeps retrying).
-- Healthy: Ready True: the adapter is loaded on every endpoint (Loaded), or
--   the base model or adapter is served (EndpointsDiscovered).
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
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report on generation " .. generation
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
elseif ready.reason == "LoadFailed" then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
hs.message = ready.message or ready.reason
return hs
