"""analyses/compare.py without a node: the payload check (tests/integration/test_compare.py runs both sides)."""

from casstrace.analyses.compare import Payload, check_payload


def test_payload_check_by_digest_sees_values_not_sizes():
    same_size = check_payload(Payload(3, 30, "aa"), Payload(3, 30, "bb"))
    assert same_size.status == "different" and "different values" in same_size.summary
    assert check_payload(Payload(3, 30, "aa"), Payload(3, 30, "aa")).status == "same"
    stored = check_payload(Payload(3, 30), Payload(3, 30))
    assert stored.status == "same" and "payload bytes only" in stored.basis
    assert (
        check_payload(Payload(None, None, note="no measured execution recorded"), Payload(3, 30)).status == "unverified"
    )
