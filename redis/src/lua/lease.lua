-- leasehold: arm the leases of the entries a consumer just read (XREADGROUP >) or claimed
-- (XCLAIM): one fresh lease id each from a durable counter, the delivery count from the
-- pending list, and the lease kept beside the entry for the fenced settle.
--
-- KEYS[1] stream   KEYS[2] lease id counter   KEYS[3] lease hash of the group
-- ARGV[1] group    ARGV[2] deadline (ms, the engine's clock)   ARGV[3..] entry ids
--
-- Returns one {lease id, delivery count} per entry, in order (delivery count 0: the entry was
-- not pending, which only a bug can cause).

local n = #ARGV - 2
if n == 0 then return {} end
local last = redis.call('INCRBY', KEYS[2], n)
local out = {}
for i = 1, n do
  local id = ARGV[i + 2]
  local lease_id = string.format('%d', last - n + i)
  local pending = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)[1]
  local count = 0
  if pending then count = tonumber(pending[4]) end
  redis.call('HSET', KEYS[3], id, 'L ' .. lease_id .. ' ' .. ARGV[2])
  out[i] = {lease_id, count}
end
return out
