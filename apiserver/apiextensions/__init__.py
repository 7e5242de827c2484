"""kube-apiextensions-apiserver in small: CustomResourceDefinitions and the custom resources they define.

- :mod:`.structural`: whether an ``openAPIV3Schema`` is structural, and where
  ``x-kubernetes-*`` extensions may stand (part of the CRD's validation);
- :mod:`.crdvalidation`: the CustomResourceDefinition's own validation
  (names, group, versions, schemas, printer columns, subresources);
- :mod:`.validation`, :mod:`.defaulting`, :mod:`.cel`: custom objects checked
  against their schema (types, formats, bounds, list and map types), defaulted
  from it, and their ``x-kubernetes-validations`` rules run;
- :mod:`.jsonpath`: the JSONPath subset printer columns, selectable fields and
  the scale subresource's paths use;
- :mod:`.customresource`: the :class:`~apiserver.registry.resource.Resource`
  objects an established CRD's served versions become;
- :mod:`.controller`: what kube-apiextensions-apiserver's controllers do in
  every APIServer process: accept names, establish, serve and unserve, and run
  the ``customresourcecleanup.apiextensions.k8s.io`` finalizer.
"""
