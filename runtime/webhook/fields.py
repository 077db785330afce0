"""A validator from a function listing an object's field errors, answered as kube-apiserver
answers an invalid object (422 Invalid, ``Kind.group "name" is invalid: field: detail``).

Most validation is "what is wrong with this object, field by field". ``FieldValidator`` turns
such a function into a ``Validator`` so a controller can refuse at the door exactly what its
reconciler would later fail on, reusing the same checks::

    def problems(machine: Machine) -> list[str]:
        return ["spec.class.name: Required value"] if not machine.spec.class_.name else []

    manager.webhook(Machine).validator(FieldValidator(Machine, problems))

Updates ratchet, as kube's own validation of new fields does: an update is refused only for
problems the old object did not already have, so an object stored before the webhook existed
(or before a check tightened) can still get its finalizers removed and its labels changed; and
an object being deleted is never refused. Deletions are always allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from kubetrio.api.meta import KubeObject
from kubetrio.runtime.webhook.admission import Denied
from kubetrio.runtime.webhook.review import AdmissionRequest

__all__ = ["FieldValidator", "invalid_message"]

T = TypeVar("T", bound=KubeObject)

Problems = Callable[[T], Sequence[str]]


def invalid_message(kind: type[KubeObject], name: str, problems: Sequence[str]) -> str:
    """``apierrors.NewInvalid``'s text: one problem as is, several as a bracketed list."""
    info = kind.KIND
    qualified = f"{info.kind}.{info.group}" if info.group else info.kind
    detail = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
    return f'{qualified} "{name}" is invalid: {detail}'


class FieldValidator(Generic[T]):
    """A ``Validator`` made from one function listing an object's field errors, answered as
    kube-apiserver answers invalid objects (422 with each cause named)."""

    def __init__(self, kind: type[T], problems: Problems[T]) -> None:
        self.kind = kind
        self.problems = problems

    def _refuse(self, obj: T, problems: Sequence[str]) -> None:
        if problems:
            name = obj.metadata.name or obj.metadata.generate_name
            raise Denied(invalid_message(self.kind, name, problems), code=422)

    async def validate_create(self, obj: T, request: AdmissionRequest) -> None:
        self._refuse(obj, self.problems(obj))

    async def validate_update(self, old: T, new: T, request: AdmissionRequest) -> None:
        if new.metadata.deletion_timestamp is not None:
            return  # its controller must be able to finish with it
        before = set(self.problems(old))
        self._refuse(new, [p for p in self.problems(new) if p not in before])

    async def validate_delete(self, obj: T, request: AdmissionRequest) -> None:
        return None
