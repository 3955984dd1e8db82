"""Schemathesis hooks for `make fuzz-api` (SCHEMATHESIS_HOOKS points here).

A schema cannot say that `expires_at` must lie between an hour ago and 24 hours ahead, so
nearly every generated body would be refused with 400 and the fuzzer would never reach an
admission. This hook offers, next to each generated body, the same body with an `expires_at`
inside that window. Hypothesis picks between them, so runs stay reproducible from the seed, and
successful admissions let the stateful phase follow their Location to GET and DELETE.
"""

import datetime

import schemathesis
from hypothesis import strategies as st

# The furthest ahead the API admits (MAX_AHEAD_HOURS, default 24), less a margin.
_MAX_AHEAD_MINUTES = 23 * 60


@schemathesis.hook
def flatmap_body(context, body):
    if not (isinstance(body, dict) and isinstance(body.get("expires_at"), str)):
        return st.just(body)

    def within_window(minutes):
        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=minutes)
        return {**body, "expires_at": at.strftime("%Y-%m-%dT%H:%M:%SZ")}

    return st.one_of(st.just(body), st.integers(min_value=2, max_value=_MAX_AHEAD_MINUTES).map(within_window))
