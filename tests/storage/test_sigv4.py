"""The SigV4 signer against AWS's published test vectors (aws-sig-v4-test-suite, 2015-08-30): a wrong
canonical form, key derivation or final HMAC changes the signature.
tests/storage/test_session_credentials.py has it accepted by a real store."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from coordinator.storage.sigv4 import AwsKey, signed_headers

KEY = AwsKey("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
WHEN = datetime(2015, 8, 30, 12, 36, 0, tzinfo=timezone.utc)
SCOPE = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"


@pytest.mark.parametrize(
    ("method", "url", "headers", "body", "signed", "signature"),
    [
        (  # get-vanilla
            "GET",
            "https://example.amazonaws.com/",
            {},
            b"",
            "host;x-amz-date",
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        ),
        (  # get-vanilla-query-order-key-case: the query is sorted before signing
            "GET",
            "https://example.amazonaws.com/?Param2=value2&Param1=value1",
            {},
            b"",
            "host;x-amz-date",
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        ),
        (  # post-x-www-form-urlencoded: the form STS takes, its content type signed
            "POST",
            "https://example.amazonaws.com/",
            {"Content-Type": "application/x-www-form-urlencoded"},
            b"Param1=value1",
            "content-type;host;x-amz-date",
            "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
        ),
    ],
)
def test_the_aws_test_suite(
    method: str, url: str, headers: dict[str, str], body: bytes, signed: str, signature: str
) -> None:
    result = signed_headers(method, url, headers, body, KEY, service="service", region="us-east-1", now=WHEN)
    assert result["authorization"] == (
        f"AWS4-HMAC-SHA256 Credential={SCOPE}, SignedHeaders={signed}, Signature={signature}"
    )
    assert result["x-amz-date"] == "20150830T123600Z"
    assert result["host"] == "example.amazonaws.com"


def test_a_session_token_is_sent_and_signed_and_s3_gets_the_payload_hash() -> None:
    temporary = AwsKey("ASIAEXAMPLE", "secret", "the-session-token")
    result = signed_headers(
        "PUT", "http://127.0.0.1:8333/bucket/k", {}, b"abc", temporary, service="s3", region="r", now=WHEN
    )
    assert result["x-amz-security-token"] == "the-session-token"
    assert (
        result["x-amz-content-sha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )
    assert (
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token," in result["authorization"]
    )
    assert "secret" not in repr(temporary)
    assert "the-session-token" not in repr(temporary)
