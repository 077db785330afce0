"""kubetrio's built-in controllers, by the name ``--controllers`` uses."""

BUILTIN_CONTROLLERS: dict[str, str] = {
    "example": "kubetrio.controllers.example:setup",
    "machine": "kubetrio.controllers.machine.setup:setup",
    "machinedeployment": "kubetrio.controllers.machinedeployment.setup:setup",
    "machineset": "kubetrio.controllers.machineset.setup:setup",
    "nodedelete": "kubetrio.controllers.nodedelete:setup",
    "safety": "kubetrio.controllers.safety.setup:setup",
    "storagegc": "kubetrio.controllers.storagegc:setup",
}
