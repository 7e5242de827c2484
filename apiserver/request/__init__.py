"""What the APIServer reads from a request before any handler trusts it: parameters, bodies, options.

Each module here turns hostile input into a 400 or 422 Status worded as
kube-apiserver words it, so that a handler only ever sees values of the right
type and range: :mod:`.params` (query parameters with Go's integer rules),
:mod:`.decodelimits` (how deep, how large and how aliased a decoded body may
be), :mod:`.deleteoptions` (a DeleteOptions body checked field by field) and
:mod:`.warning` (``Warning`` headers that are always legal HTTP).
"""
