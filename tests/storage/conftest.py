"""The storage tests' S3 server: moto in server mode, a process of its own on 127.0.0.1, with
IAM authentication on (an access key made for the tests; any other key is refused)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

SERVER = Path(__file__).with_name("moto_server.py")
REGION = "us-east-1"


@dataclasses.dataclass(frozen=True)
class S3Server:
    """Where the server listens and the credentials it accepts."""

    endpoint: str
    key: str
    secret: str

    def env(self) -> dict[str, str]:
        """The environment s3fs (boto) reads them from."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.key,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_DEFAULT_REGION": REGION,
        }

    def client(self, key: str | None = None, secret: str | None = None):
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=key or self.key,
            aws_secret_access_key=secret or self.secret,
            region_name=REGION,
        )

    def new_bucket(self, prefix: str = "run") -> str:
        """A new, empty bucket `<prefix>-<random>` (e.g. `my-bucket-3f0c...`)."""
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object of `bucket` under `prefix`: key -> bytes."""
        client = self.client()
        found = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                found[item["Key"]] = client.get_object(Bucket=bucket, Key=item["Key"])[
                    "Body"
                ].read()
        return found


@pytest.fixture(scope="session")
def s3_server():
    """The server, started once per test process, with one IAM user allowed everything on S3."""
    import boto3

    process = subprocess.Popen(
        [sys.executable, str(SERVER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = int(process.stdout.readline())
        endpoint = f"http://127.0.0.1:{port}"
        iam = boto3.client(
            "iam",
            endpoint_url=endpoint,
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
            region_name=REGION,
        )
        iam.create_user(UserName="burnish")
        iam.put_user_policy(
            UserName="burnish",
            PolicyName="s3",
            PolicyDocument='{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
            '"Action": "s3:*", "Resource": "*"}]}',
        )
        key = iam.create_access_key(UserName="burnish")["AccessKey"]
        request = urllib.request.Request(
            f"{endpoint}/moto-api/reset-auth", data=b"0", headers={"Content-Type": "text/plain"}
        )
        urllib.request.urlopen(request).read()  # from now on every request is authenticated
        yield S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"])
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The server's endpoint and credentials in the environment (and nothing else of AWS's)."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server


@pytest.fixture
def bucket(s3_env) -> str:
    """A new, empty bucket."""
    return s3_env.new_bucket()
