"""DeleteOptions bodies checked field by field, with Go's unmarshal messages."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.errors import APIError
from apiserver.request import deleteoptions


@pytest.mark.parametrize(("doc", "message"), [
    pytest.param({"preconditions": "x"}, "json: cannot unmarshal string into Go struct field "
                 "DeleteOptions.preconditions of type v1.Preconditions", id="preconditions-string"),
    pytest.param({"preconditions": [1]}, "json: cannot unmarshal array into Go struct field "
                 "DeleteOptions.preconditions of type v1.Preconditions", id="preconditions-list"),
    pytest.param({"preconditions": 5}, "json: cannot unmarshal number 5 into Go struct field "
                 "DeleteOptions.preconditions of type v1.Preconditions", id="preconditions-number"),
    pytest.param({"preconditions": {"uid": 5}}, "json: cannot unmarshal number 5 into Go struct field "
                 "DeleteOptions.preconditions.uid of type types.UID", id="uid-number"),
    pytest.param({"dryRun": 5}, "json: cannot unmarshal number 5 into Go struct field DeleteOptions.dryRun "
                 "of type []string", id="dryrun-number"),
    pytest.param({"dryRun": [True]}, "json: cannot unmarshal bool into Go struct field DeleteOptions.dryRun "
                 "of type string", id="dryrun-item"),
    pytest.param({"gracePeriodSeconds": 99999999999999999999}, "json: cannot unmarshal number "
                 "99999999999999999999 into Go struct field DeleteOptions.gracePeriodSeconds of type int64",
                 id="grace-beyond-int64"),
    pytest.param({"gracePeriodSeconds": "3"}, "json: cannot unmarshal string into Go struct field "
                 "DeleteOptions.gracePeriodSeconds of type int64", id="grace-string"),
    pytest.param({"orphanDependents": "yes"}, "json: cannot unmarshal string into Go struct field "
                 "DeleteOptions.orphanDependents of type bool", id="orphan-string"),
    pytest.param({"propagationPolicy": {}}, "json: cannot unmarshal object into Go struct field "
                 "DeleteOptions.propagationPolicy of type v1.DeletionPropagation", id="policy-object"),
    pytest.param({"propagationPolicy": "Sometimes"}, 'Unsupported propagationPolicy "Sometimes": supported '
                 'values: "Orphan", "Background", "Foreground"', id="policy-unknown"),
    pytest.param({"dryRun": ["Some"]}, 'Invalid dryRun value: "Some". Valid values: ["All"]', id="dryrun-value"),
    pytest.param([], "json: cannot unmarshal array into Go value of type v1.DeleteOptions", id="not-an-object"),
])
def test_wrong_types_are_a_400(doc: Any, message: str) -> None:
    with pytest.raises(APIError) as err:
        deleteoptions.from_document(doc)
    assert (err.value.code, err.value.message) == (400, message)


def test_valid_options_are_read() -> None:
    opts = deleteoptions.from_document({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                                        "preconditions": {"uid": "u", "resourceVersion": "7"},
                                        "orphanDependents": True, "dryRun": ["All"], "unknown": [1, 2]})
    assert (opts.grace_period_seconds, opts.precondition_uid, opts.precondition_rv, opts.propagation_policy,
            opts.dry_run) == (0, "u", "7", "Orphan", True)
    assert deleteoptions.from_document(None).grace_period_seconds is None


def test_the_eviction_names_its_own_field() -> None:
    with pytest.raises(APIError) as err:
        deleteoptions.from_document("x", struct="Eviction.deleteOptions")
    assert err.value.code == 400
    with pytest.raises(APIError) as err:
        deleteoptions.from_document({"preconditions": 1}, struct="Eviction.deleteOptions")
    assert "Eviction.deleteOptions.preconditions" in err.value.message
