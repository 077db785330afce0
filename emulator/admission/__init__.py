"""Admission webhooks, called by the emulator as kube-apiserver calls them.

A ``MutatingWebhookConfiguration`` or ``ValidatingWebhookConfiguration`` stored in the emulator
takes effect on the next write: every create, update, patch, apply and delete (``status``
included) whose resource, operation, namespace labels and object labels its rules select is sent
as an ``admission.k8s.io/v1`` ``AdmissionReview`` over HTTPS, verified with the ``caBundle``.
So a controller's webhooks are tested against the same wire protocol, error texts and ordering a
cluster has: a refusal reaches ``kubectl`` as ``admission webhook "NAME" denied the request:
MESSAGE``, a webhook that is down fails the write (``failurePolicy: Fail``) with ``failed calling
webhook "NAME": ...`` or is skipped (``Ignore``), warnings come back as ``Warning:`` lines.

Example (``url`` must be reachable from the emulator; in-cluster ``service`` references are
refused, as nothing runs in-cluster here)::

    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata: {name: no-red}
    webhooks:
    - name: no-red.example.com
      admissionReviewVersions: [v1]
      sideEffects: None
      clientConfig: {url: "https://127.0.0.1:9443/validate", caBundle: <base64 PEM>}
      rules: [{operations: [CREATE, UPDATE], apiGroups: [""], apiVersions: [v1],
               resources: [configmaps]}]

A ``deletecollection`` admits each object as its own DELETE. Not done here: the ``scale``
subresource skips webhooks. CRD conversion
webhooks are ``emulator/crdconvert.py``'s.

Holding a test's mock clock: each webhook call is marked as a request in flight, and the
emulator's wait for its webhooks as waiting on simulated time (``kubetrio.runtime.util.inflight``),
so a webhook in the test's own run that answers by sleeping on the clock lets ``timeoutSeconds``
expire in simulated time.
"""
