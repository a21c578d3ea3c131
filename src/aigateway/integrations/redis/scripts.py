"""The Lua scripts that keep the shared state, written once for the sync and async clients.

Each runs atomically in Redis, so many processes reserving at once never see a half-done
update. Numbers come in as strings and go back as strings (Redis would truncate Lua numbers
to integers). Every key a script writes gets an expiry (``ttl`` milliseconds).
"""

from __future__ import annotations

__all__ = [
    "ACT_CLAIM",
    "ACT_DONE",
    "BUDGET_RESERVE",
    "RATE_OBSERVE",
    "RATE_RESERVE",
    "RATE_TOKENS",
    "SETTLE",
]

RATE_RESERVE = """
-- KEYS[1]: the key's rate-limit hash. ARGV: now, ttl, cap, cap_window (cap 0: none), margin,
-- cap_tokens (0: none).
-- Counts one request in the current window; returns the seconds to wait ('0': go now): when
-- the window's requests are used up, or its tokens (the gateway counts a reply's tokens once
-- it is known, so the requests after one that went over would be refused).
-- The last ``margin`` seconds of a window are left unused: a request sent then could reach
-- the gateway in its next window, on top of that window's full count.
local k = KEYS[1]
local now, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local cap, cap_window = tonumber(ARGV[3]), tonumber(ARGV[4])
local cap_tokens = tonumber(ARGV[6]) or 0
if cap > 0 then
  local stored = tonumber(redis.call('HGET', k, 'cap'))
  if not stored or cap < stored then
    redis.call('HSET', k, 'cap', cap, 'cap_window', cap_window)
  end
end
if cap_tokens > 0 then
  local stored = tonumber(redis.call('HGET', k, 'cap_tokens'))
  if not stored or cap_tokens < stored then redis.call('HSET', k, 'cap_tokens', cap_tokens) end
end
local f = redis.call('HMGET', k, 'limit', 'cap', 'cap_window', 'window', 'reset', 'used',
  'tokens_limit', 'cap_tokens', 'tokens_used')
local limit, window = tonumber(f[1]), tonumber(f[4])
local stated = tonumber(f[2])
if stated then
  if not limit or stated < limit then limit = stated end
  window = tonumber(f[3])
end
local tokens_limit, stated_tokens = tonumber(f[7]), tonumber(f[8])
if stated_tokens and (not tokens_limit or stated_tokens < tokens_limit) then
  tokens_limit = stated_tokens
end
if not limit and not tokens_limit then return '0' end
local reset, used = tonumber(f[5]), tonumber(f[6]) or 0
local tokens_used = tonumber(f[9]) or 0
if not reset or now >= reset then
  if not window then
    redis.call('HDEL', k, 'reset', 'used', 'tokens_used')
    return '0'
  end
  if not reset then
    reset = now + window
  else
    reset = reset + window * (math.floor((now - reset) / window) + 1)
  end
  used, tokens_used = 0, 0
end
redis.call('PEXPIRE', k, ttl)
local room = (not limit or used < limit) and (not tokens_limit or tokens_used < tokens_limit)
if room and now < reset - tonumber(ARGV[5]) then
  redis.call('HSET', k, 'used', used + 1, 'reset', reset, 'tokens_used', tokens_used)
  return '0'
end
redis.call('HSET', k, 'used', used, 'reset', reset, 'tokens_used', tokens_used)
return tostring(reset - now)
"""

RATE_OBSERVE = """
-- KEYS[1]: the key's rate-limit hash. ARGV: limit, remaining, reset_at, window, now, ttl,
-- tokens limit, tokens remaining ('' when the reply did not say).
-- The gateway's word from a reply: its limits, what is used of its window, when it resets.
local k = KEYS[1]
local limit, remaining = tonumber(ARGV[1]), tonumber(ARGV[2])
local reset_at, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local now, ttl = tonumber(ARGV[5]), tonumber(ARGV[6])
local tokens_limit, tokens_remaining = tonumber(ARGV[7]), tonumber(ARGV[8])
if reset_at <= now then return '0' end
local f = redis.call('HMGET', k, 'reset', 'used', 'window', 'tokens_used')
local reset, used = tonumber(f[1]), tonumber(f[2]) or 0
local known = tonumber(f[3])
local tokens_used = tonumber(f[4]) or 0
local taken = math.max(0, limit - remaining)
local tokens_taken = 0
if tokens_limit and tokens_remaining then
  tokens_taken = math.max(0, tokens_limit - tokens_remaining)
end
if not reset or reset_at > reset + 0.5 then
  used, tokens_used = taken, tokens_taken
elseif reset_at < reset - 0.5 then
  used, tokens_used = math.max(used, taken), math.max(tokens_used, tokens_taken)
else
  used, tokens_used = math.max(used, taken), math.max(tokens_used, tokens_taken)
  reset_at = reset
end
if known and known > window then window = known end
redis.call('HSET', k, 'limit', limit, 'reset', reset_at, 'used', used, 'window', window,
  'tokens_used', tokens_used)
if tokens_limit then redis.call('HSET', k, 'tokens_limit', tokens_limit) end
redis.call('PEXPIRE', k, ttl)
return '1'
"""

RATE_TOKENS = """
-- KEYS[1]: the key's rate-limit hash. ARGV: tokens, now.
-- A reply's tokens, counted in the current window: a stated tokens limit needs them, and the
-- gateway's own ``X-RateLimit-Remaining-Tokens`` tells the tokens left before that reply.
local reset = tonumber(redis.call('HGET', KEYS[1], 'reset'))
if reset and tonumber(ARGV[2]) < reset then
  redis.call('HINCRBY', KEYS[1], 'tokens_used', tonumber(ARGV[1]))
end
return '1'
"""

BUDGET_RESERVE = """
-- KEYS[1]: a budget hash, KEYS[2]: its probe key. ARGV: max_credits, ttl, probe ttl (ms).
-- Returns {'1', estimate} (a place taken), {'0', spent} (the budget is spent), or
-- {'2', '0'} (no call's cost is known yet and a call is out learning it: ask again soon).
-- Spent counts the calls whose cost is unknown (the first reply on a key) at the average cost
-- of the others; a place reserves that average until its call settles.
local k, probe = KEYS[1], KEYS[2]
local max, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local f = redis.call('HMGET', k, 'spent', 'reserved', 'counted', 'uncounted')
local spent, reserved = tonumber(f[1]) or 0, tonumber(f[2]) or 0
local counted, uncounted = tonumber(f[3]) or 0, tonumber(f[4]) or 0
local average = 0
if counted > 0 then average = spent / counted end
local used = spent + uncounted * average
if used + reserved >= max then return {'0', tostring(used)} end
redis.call('HSET', k, 'reserved', tostring(reserved + average))
redis.call('PEXPIRE', k, ttl)
if counted == 0 then
  if redis.call('SET', probe, '1', 'NX', 'PX', ARGV[3]) then return {'1', '0'} end
  return {'2', '0'}
end
return {'1', tostring(average)}
"""

SETTLE = """
-- KEYS[1]: the usage hash, KEYS[2]: a budget hash, KEYS[3]: its probe key ('0' in ARGV[3]:
-- no budget). ARGV: estimate, ttl, budget flag, then six fields per call that ended:
-- model, stated cost, remaining balance, prompt tokens, completion tokens, error class.
-- A cost is the stated one, else read from the range of balances the key's replies reported:
-- a balance below the lowest seen adds the fall; one above the highest (an earlier charge
-- whose reply came late) adds the rise; one within adds nothing. However replies interleave,
-- the sum is the highest balance minus the lowest: every charge but the first reply's.
local usage, budget, probe = KEYS[1], KEYS[2], KEYS[3]
local estimate, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local total, counted, uncounted = 0, 0, 0
local i = 4
while i + 5 <= #ARGV do
  local model, charge, balance = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local m = 'model:' .. model .. ':'
  if balance then
    local f = redis.call('HMGET', usage, 'lowest_balance', 'highest_balance')
    local lowest, highest = tonumber(f[1]), tonumber(f[2])
    if not lowest then
      redis.call('HSET', usage, 'lowest_balance', tostring(balance),
        'highest_balance', tostring(balance))
    elseif balance < lowest then
      if not charge then charge = lowest - balance end
      redis.call('HSET', usage, 'lowest_balance', tostring(balance))
    elseif balance > highest then
      if not charge then charge = balance - highest end
      redis.call('HSET', usage, 'highest_balance', tostring(balance))
    elseif not charge then
      charge = 0
    end
  end
  redis.call('HINCRBY', usage, 'requests', 1)
  redis.call('HINCRBY', usage, m .. 'requests', 1)
  redis.call('HINCRBY', usage, 'prompt_tokens', tonumber(ARGV[i + 3]))
  redis.call('HINCRBY', usage, m .. 'prompt_tokens', tonumber(ARGV[i + 3]))
  redis.call('HINCRBY', usage, 'completion_tokens', tonumber(ARGV[i + 4]))
  redis.call('HINCRBY', usage, m .. 'completion_tokens', tonumber(ARGV[i + 4]))
  if ARGV[i + 5] ~= '' then
    redis.call('HINCRBY', usage, 'failures', 1)
    redis.call('HINCRBY', usage, m .. 'failures', 1)
  elseif charge then
    redis.call('HINCRBYFLOAT', usage, 'credits', tostring(charge))
    redis.call('HINCRBYFLOAT', usage, m .. 'credits', tostring(charge))
    total = total + charge
    counted = counted + 1
  else
    redis.call('HINCRBY', usage, 'uncounted', 1)
    uncounted = uncounted + 1
  end
  i = i + 6
end
if #ARGV >= 4 then redis.call('PEXPIRE', usage, ttl) end
if ARGV[3] == '1' then
  local reserved = tonumber(redis.call('HGET', budget, 'reserved')) or 0
  redis.call('HSET', budget, 'reserved', tostring(math.max(0, reserved - estimate)))
  if total > 0 then redis.call('HINCRBYFLOAT', budget, 'spent', tostring(total)) end
  if counted > 0 then redis.call('HINCRBY', budget, 'counted', counted) end
  if uncounted > 0 then redis.call('HINCRBY', budget, 'uncounted', uncounted) end
  redis.call('DEL', probe)
  redis.call('PEXPIRE', budget, ttl)
end
return tostring(total)
"""

ACT_CLAIM = """
-- KEYS[1]: an act's key. ARGV: a fresh idempotency key, ttl.
-- The first sender stores its key; a sender while it is unconfirmed gets that key back.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return ARGV[1] end
return redis.call('GET', KEYS[1])
"""

ACT_DONE = """
-- KEYS[1]: an act's key. ARGV: its idempotency key. The act was performed: forget it, so a
-- later identical act is a new one (unless another sender already replaced the key).
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
