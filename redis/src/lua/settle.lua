-- leasehold: the fenced settle of one Redis Streams entry (ack / nack / reject / renew),
-- checked and applied atomically on the server.
--
-- A plain XACK names an entry, not a delivery: it clears the entry from the group's pending
-- list whoever holds it, so an ack from a consumer that lost the entry to a claim counts. This
-- script settles only the delivery the caller holds:
--   1. the entry is still pending (XPENDING), to the calling consumer when one is named, with
--      the delivery count the caller received (XCLAIM increments it, so every claim is a new
--      count: the count is the fencing token Redis already keeps);
--   2. the lease kept beside the entry (hash KEYS[3], field = entry id, value
--      "L <lease id> <deadline ms>") is the caller's lease, and it has not expired;
--   3. the receipt the caller sends names this entry.
-- Anything else is refused with `stale_lease` (or `receipt_mismatch`) and changes nothing.
--
-- Time: the deadline is virtual (the engine's clock, ARGV[6]). In a consumer of your own, check
-- Redis's idle time instead (XPENDING's third field against your claim idle time) and drop the
-- hash, or keep it as the lease id store.
--
-- KEYS[1] stream   KEYS[2] dead-letter stream (<stream>-dlq)   KEYS[3] lease hash of the group
-- ARGV[1] group    ARGV[2] entry id    ARGV[3] op: ack | nack | reject | renew
-- ARGV[4] lease id ARGV[5] delivery count    ARGV[6] now (ms)    ARGV[7] consumer ('' = any)
-- ARGV[8] receipt (entry id the caller holds)   ARGV[9] max deliveries
-- ARGV[10] nack delay / renew extension (ms)    ARGV[11] '1' when a reason is given
-- ARGV[12] reason (x-error)
--
-- Returns {'acked'} | {'idle', not_before} | {'dead', reason} | {'renewed', deadline}
--       | {'stale_lease'} | {'receipt_mismatch'}.

local stream, dlq, leases = KEYS[1], KEYS[2], KEYS[3]
local group, id, op = ARGV[1], ARGV[2], ARGV[3]
local lease_id, delivery, now = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local consumer, receipt, max_deliveries = ARGV[7], ARGV[8], tonumber(ARGV[9])
local amount = tonumber(ARGV[10])
local reason = nil
if ARGV[11] == '1' then reason = ARGV[12] end

-- 1. Still pending, to this consumer, with this delivery count.
local pending = redis.call('XPENDING', stream, group, id, id, 1)[1]
if not pending then return {'stale_lease'} end
if consumer ~= '' and pending[2] ~= consumer then return {'stale_lease'} end
if tonumber(pending[4]) ~= delivery then return {'stale_lease'} end

-- 2. The lease kept beside the entry is this one, and unexpired.
local kept = redis.call('HGET', leases, id)
if not kept then return {'stale_lease'} end
local state, kept_id, deadline = string.match(kept, '^(%a) (%d+) (%d+)$')
if state ~= 'L' or kept_id ~= lease_id or not (now < tonumber(deadline)) then
  return {'stale_lease'}
end

-- 3. The receipt names this entry.
if receipt ~= id then return {'receipt_mismatch'} end

local function dead_letter(why)
  local fields = {}
  local entry = redis.call('XRANGE', stream, id, id)[1]
  if entry then fields = entry[2] end
  local args = {dlq, '*'}
  for i = 1, #fields do args[#args + 1] = fields[i] end
  for _, v in ipairs({'x-group', group, 'x-id', id, 'x-deliveries', tostring(delivery),
                      'x-error', why}) do
    args[#args + 1] = v
  end
  redis.call('XADD', unpack(args))
  redis.call('XACK', stream, group, id)
  redis.call('HDEL', leases, id)
  return {'dead', why}
end

if op == 'ack' then
  redis.call('XACK', stream, group, id)
  redis.call('HDEL', leases, id)
  return {'acked'}
elseif op == 'reject' then
  return dead_letter(reason or '')
elseif op == 'nack' then
  if delivery >= max_deliveries then
    return dead_letter(reason or 'max attempts')
  end
  -- No XNACK: the entry stays pending and is claimable once idle past its lease (or later,
  -- after the requested delay).
  local not_before = math.max(now + amount, tonumber(deadline))
  redis.call('HSET', leases, id, 'I 0 ' .. string.format('%d', not_before))
  return {'idle', not_before}
elseif op == 'renew' then
  local until_ms = now + amount
  redis.call('HSET', leases, id, 'L ' .. lease_id .. ' ' .. string.format('%d', until_ms))
  -- Reset Redis's own idle time too; JUSTID leaves the delivery count alone.
  redis.call('XCLAIM', stream, group, pending[2], 0, id, 'JUSTID')
  return {'renewed', until_ms}
end
return redis.error_reply('leasehold settle: unknown op ' .. tostring(op))
