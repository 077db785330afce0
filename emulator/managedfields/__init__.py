"""Server-side apply's field ownership: ``metadata.managedFields`` kept on every write, and
apply's merge, conflicts and removals, as kube-apiserver's field manager does them.

Modules: ``fieldset`` (paths and fieldsV1), ``schema`` (list and map kinds from the OpenAPI
or CRD schema), ``walk`` (an object's paths), ``merge`` (applied configuration into the live
object, removal), ``entries`` (the managedFields entries, manager naming), ``ownership`` (the
update and apply algorithms).
"""

from kubetrio.emulator.managedfields.entries import manager_name
from kubetrio.emulator.managedfields.ownership import MISSING, Writer, apply, record_update
from kubetrio.emulator.managedfields.schema import schema_for

__all__ = ["MISSING", "Writer", "apply", "manager_name", "record_update", "schema_for"]
