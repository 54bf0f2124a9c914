"""Rules a Redis script must compute inside its atomic step mirror a pure Python function; here
the Lua copy is run on a real Redis and held to the Python one, value for value: AOPIC's
cash_priority (frontier/aopic.py, store/redis/lua/_common.lua)."""

from __future__ import annotations

import math
import random
from typing import Any

from crawlspace.bands import FrontQueues
from crawlspace.frontier.aopic import SEED_CASH, cash_priority
from crawlspace.store.redis.scripts import compose_script

CASH_PRIORITIES = """
local out = {}
for i = 2, #ARGV do out[#out + 1] = cash_priority(tonumber(ARGV[i])) end
return out
"""


def test_lua_cash_priority_is_pythons(redis_single_client: Any) -> None:
    rng = random.Random(18)
    cash = [SEED_CASH, 0.0, -1.0, 5e-324, 1e-300, 2.0**64, 2.0**70, 1e300]
    cash += [2.0**k for k in range(-60, 66, 7)]
    cash += [math.exp(rng.uniform(-700, 50)) for _ in range(400)]
    cash += [rng.uniform(0.0, 2.0) for _ in range(200)]
    script = compose_script(CASH_PRIORITIES, FrontQueues())
    got = redis_single_client.eval(script, 0, "{t}:", *(repr(c) for c in cash))
    assert [int(v) for v in got] == [cash_priority(c) for c in cash]
