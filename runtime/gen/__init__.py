"""Generated manifests: CustomResourceDefinitions from typed kinds and RBAC rules from the
permissions controllers declare."""
