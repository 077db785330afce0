"""``metav1.Condition``: the standard shape of a status condition for one's own kinds."""

from __future__ import annotations

from typing import Literal

from kubetrio.api.meta import Model

ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(Model, kw_only=True):
    """One observation of an object's state. Every field but ``observedGeneration`` is required
    on the wire (Go never omits them), so none has a default that would leave it off.
    ``lastTransitionTime`` is when ``status`` last changed, not when the condition was written."""

    type: str
    status: ConditionStatus
    reason: str
    message: str
    last_transition_time: str
    observed_generation: int = 0
